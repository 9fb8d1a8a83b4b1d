"""Harness-owned driver of the privacy task: runs the editable membership-inference attack, saves its scores.

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

The harness restores this file, numerics.py and target_model.py before every run. The driver pins the
numerics (numerics.py) before anything imports numpy, loads the phase's world (the val world from the
public folder, the test world from the test inputs) and the public auxiliary pool, seeds Python's,
numpy's and (when the attack uses it) torch's RNGs from --seed, calls the editable

    attack.attack(target, candidates_x, candidates_y, aux_x, aux_y, params, seed) -> scores

and checks that it returned one finite number per candidate. It writes `<out>/scores.csv` (id, score).
Nothing printed here is parsed as a metric; the evaluator re-validates the file. The shared pieces
(command line, params, errors, seeding, reading arrays, writing) come from the harness's read-only
`task_runtime` package.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import numerics  # noqa: E402

numerics.pin()

import time  # noqa: E402

import numpy as np  # noqa: E402

import target_model  # noqa: E402
from task_runtime import (DriverArgs, DriverError, as_vector, driver_main, read_npz, read_params,  # noqa: E402
                          seed_everything, write_atomic)


def checked_scores(raw: object, n: int) -> np.ndarray:
    """The attack's output as n finite float64 scores, or a one-line reason why not."""
    scores = as_vector(raw, n, "attack", "score")
    if not np.isfinite(scores).all():
        raise DriverError(f"attack returned {int((~np.isfinite(scores)).sum())} NaN or infinite scores")
    return scores


def run(args: DriverArgs) -> None:
    import attack  # the agent-editable module, next to this driver

    if not callable(getattr(attack, "attack", None)):
        raise DriverError("attack.py must define attack(target, candidates_x, candidates_y, aux_x, aux_y, params, seed)")
    params = read_params(HERE / "params.json")
    world = args.inputs  # the val world is the public folder itself, the test world the test inputs
    target = read_npz(world / "target_model.npz", tuple(target_model.SHAPES))
    candidates = read_npz(world / "candidates.npz", ("id", "x", "y"))
    aux = read_npz(args.data / "aux.npz", ("x", "y"))
    seed_everything(args.seed)  # torch too, when the attack imported it: importing it here costs seconds
    started = time.process_time()
    raw = attack.attack({k: v.copy() for k, v in target.items()}, candidates["x"].copy(), candidates["y"].copy(),
                        aux["x"].copy(), aux["y"].copy(), dict(params), args.seed)
    scores = checked_scores(raw, len(candidates["id"]))
    lines = [f"{int(i)},{s!r}" for i, s in zip(candidates["id"], scores.tolist())]
    path = write_atomic(args.out / "scores.csv", "id,score\n" + "\n".join(lines) + "\n")
    print(f"[{args.phase}] scored {len(scores)} candidates in {time.process_time() - started:.1f} CPU-s; "
          f"wrote {path}", flush=True)


def main(argv: list[str] | None = None) -> int:
    return driver_main(run, "Run attack.py against the phase's target model and save its scores.", ".",
                       "seeds the attack's randomness", argv)


if __name__ == "__main__":
    sys.exit(main())
