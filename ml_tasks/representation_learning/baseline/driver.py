"""Harness-owned driver of the representation_learning task: pretrain, then embed the probe's inputs.

    python driver.py --phase val  --data <public> --out <output> [--seed N]
    python driver.py --phase test --data <public> --test-inputs <dir> --out <output> [--seed N]

The harness restores this file before every run. It hands the editable `encoder.pretrain` only the
unlabeled images, then calls `encoder.embed` on the probe's training inputs and on the inputs to
score (validation inputs in experiments, hidden test inputs in the final run), checks the
embeddings (one finite row of at most MAX_DIM numbers per input, the same width for both sets) and
writes `<out>/embeddings.csv` (set, id, e0..e{d-1}). The linear probe is trained and scored by the
task's evaluator, on labels no agent code ever sees. Nothing printed here is parsed as a metric. The
shared pieces (command line, params, errors, pinned torch numerics, seeding, reading arrays, writing)
come from the harness's read-only `task_runtime` package.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from task_runtime import (DriverArgs, DriverError, driver_main, pick_device, read_npz, read_params, seed_everything,
                          warm_up_torch, write_atomic)

HERE = Path(__file__).resolve().parent
MAX_DIM = 32  # the largest embedding the probe accepts
MAX_ABS = 1e6  # larger magnitudes are rejected: they only serve to break the probe's solver


def check_embeddings(raw: object, n: int, where: str) -> np.ndarray:
    if hasattr(raw, "detach"):
        raw = raw.detach().cpu().numpy()
    try:
        values = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DriverError(f"embed must return numbers for the {where} ({exc})") from None
    if values.ndim != 2 or values.shape[0] != n or not 1 <= values.shape[1] <= MAX_DIM:
        raise DriverError(f"embed returned shape {values.shape} for the {where}; expected ({n}, d) with 1 <= d <= {MAX_DIM}")
    if not np.isfinite(values).all():
        raise DriverError(f"embed returned non-finite values (NaN or inf) for the {where}")
    if np.abs(values).max() > MAX_ABS:
        raise DriverError(f"embed returned values beyond +-{MAX_ABS:g} for the {where}")
    return values


def write_embeddings(out: Path, sets: dict[str, tuple[np.ndarray, np.ndarray]]) -> Path:
    dim = next(iter(sets.values()))[1].shape[1]
    lines = ["set,id," + ",".join(f"e{j}" for j in range(dim))]
    for name, (ids, values) in sets.items():
        lines += [f"{name},{i}," + ",".join(f"{v:.7g}" for v in row) for i, row in zip(ids.tolist(), values)]
    return write_atomic(out / "embeddings.csv", "\n".join(lines) + "\n")


def run(args: DriverArgs) -> None:
    # Same bits on every x86-64 machine: tiny rounding differences grow through training into different
    # encoders (an earlier version's baseline scored 0.02 apart on two machines at one thread), so torch is
    # pinned to one thread and portable kernels before it loads (task_runtime.warm_up_torch).
    warm_up_torch()
    sys.path.insert(0, str(HERE))
    import encoder  # the agent-editable module, next to this driver

    for name in ("pretrain", "embed"):
        if not callable(getattr(encoder, name, None)):
            raise DriverError(f"encoder.py must define {name} (see the description)")
    params = read_params(HERE / "params.json")
    unlabeled = read_npz(args.data / "unlabeled.npz", ("x",))["x"]
    probe_train = read_npz(args.data / "probe_train_inputs.npz", ("id", "x"))
    scored = read_npz(args.inputs, ("id", "x"))
    device = pick_device()
    seed_everything(args.seed, import_torch=True)
    started = time.perf_counter()
    model = encoder.pretrain(unlabeled.copy(), dict(params), device)
    print(f"[{args.phase}] pretrained on {len(unlabeled)} unlabeled images in {time.perf_counter() - started:.1f} s",
          flush=True)
    train_emb = check_embeddings(encoder.embed(model, probe_train["x"].copy(), dict(params), device),
                                 len(probe_train["id"]), "probe's training inputs")
    scored_emb = check_embeddings(encoder.embed(model, scored["x"].copy(), dict(params), device),
                                  len(scored["id"]), f"{args.phase} inputs")
    if train_emb.shape[1] != scored_emb.shape[1]:
        raise DriverError(f"embed returned width {train_emb.shape[1]} for the probe's training inputs but "
                          f"{scored_emb.shape[1]} for the {args.phase} inputs")
    write_embeddings(args.out, {"probe_train": (probe_train["id"], train_emb), args.phase: (scored["id"], scored_emb)})
    print(f"[{args.phase}] wrote {train_emb.shape[1]}-dimensional embeddings in {time.perf_counter() - started:.1f} s",
          flush=True)


def main(argv: list[str] | None = None) -> int:
    return driver_main(run, "Pretrain encoder.py and embed the linear probe's inputs.", "{phase}_inputs.npz",
                       "seeds the encoder's randomness", argv)


if __name__ == "__main__":
    sys.exit(main())
