"""Harness-owned driver of the privacy task: runs the editable membership-inference attack, saves its scores.

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

The harness restores this file, numerics.py and target_model.py before every run. The driver pins the
numerics (numerics.py) before anything imports numpy, loads the phase's world (the val world from the
public folder, the test world from the test inputs) and the public auxiliary pool, seeds Python's,
numpy's and (when the attack uses it) torch's RNGs from --seed, calls the editable

    attack.attack(target, candidates_x, candidates_y, aux_x, aux_y, params, seed) -> scores

and checks that it returned one finite number per candidate. It writes `<out>/scores.csv` (id, score).
Nothing printed here is parsed as a metric; the evaluator re-validates the file.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import numerics  # noqa: E402

numerics.pin()

import json  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import target_model  # noqa: E402


class DriverError(Exception):
    """A problem with the inputs or with what attack.py returned: reported as one line, exit 1."""


def read_npz(path: Path, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise DriverError(f"expected data file {path} does not exist")
    with np.load(path, allow_pickle=False) as data:
        missing = [k for k in keys if k not in data.files]
        if missing:
            raise DriverError(f"{path.name} lacks arrays {missing}")
        return {k: data[k] for k in keys}


def read_params(path: Path) -> dict:
    try:
        params = json.loads(path.read_text())
    except FileNotFoundError:
        raise DriverError(f"{path.name} is missing; it must hold a JSON object") from None
    except json.JSONDecodeError as exc:
        raise DriverError(f"{path.name} is not valid JSON: {exc}") from None
    if not isinstance(params, dict):
        raise DriverError(f"{path.name} must hold a JSON object, got {type(params).__name__}")
    return params


def checked_scores(raw: object, n: int) -> np.ndarray:
    """The attack's output as n finite float64 scores, or a one-line reason why not."""
    try:
        scores = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise DriverError(f"attack must return {n} numbers, got {type(raw).__name__}") from None
    if scores.shape != (n,):
        raise DriverError(f"attack must return one score per candidate, shape ({n},); got {scores.shape}")
    if not np.isfinite(scores).all():
        raise DriverError(f"attack returned {int((~np.isfinite(scores)).sum())} NaN or infinite scores")
    return scores


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    if "torch" in sys.modules:  # seeded only when the attack imported it: importing torch costs seconds
        sys.modules["torch"].manual_seed(seed)


def run(phase: str, data: Path, world: Path, out: Path, seed: int) -> int:
    import attack  # the agent-editable module, next to this driver

    if not callable(getattr(attack, "attack", None)):
        raise DriverError("attack.py must define attack(target, candidates_x, candidates_y, aux_x, aux_y, params, seed)")
    params = read_params(HERE / "params.json")
    target = read_npz(world / "target_model.npz", tuple(target_model.SHAPES))
    candidates = read_npz(world / "candidates.npz", ("id", "x", "y"))
    aux = read_npz(data / "aux.npz", ("x", "y"))
    seed_everything(seed)
    started = time.process_time()
    raw = attack.attack({k: v.copy() for k, v in target.items()}, candidates["x"].copy(), candidates["y"].copy(),
                        aux["x"].copy(), aux["y"].copy(), dict(params), seed)
    scores = checked_scores(raw, len(candidates["id"]))
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".scores.csv.tmp"
    lines = [f"{int(i)},{s!r}" for i, s in zip(candidates["id"], scores.tolist())]
    tmp.write_text("id,score\n" + "\n".join(lines) + "\n")
    os.replace(tmp, out / "scores.csv")
    print(f"[{phase}] scored {len(scores)} candidates in {time.process_time() - started:.1f} CPU-s; "
          f"wrote {out / 'scores.csv'}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run attack.py against the phase's target model and save its scores.")
    parser.add_argument("--phase", choices=["val", "test"], required=True)
    parser.add_argument("--data", type=Path, required=True, help="public data dir (aux pool, val world)")
    parser.add_argument("--test-inputs", type=Path, help="the test world's dir (test phase only)")
    parser.add_argument("--out", type=Path, required=True, help="where scores.csv is written")
    parser.add_argument("--seed", type=int, default=0, help="seeds the attack's randomness")
    args = parser.parse_args(argv)
    if args.phase == "test" and args.test_inputs is None:
        parser.error("--phase test needs --test-inputs")
    world = args.data if args.phase == "val" else args.test_inputs
    try:
        return run(args.phase, args.data, world, args.out, args.seed)
    except DriverError as exc:
        print(f"driver error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
