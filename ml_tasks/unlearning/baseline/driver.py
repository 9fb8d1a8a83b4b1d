"""Harness-owned driver of the unlearning task: hands the original model to `unlearn`, saves its weights.

    python driver.py --phase val  --data <public> --out <output> [--seed N]
    python driver.py --phase test --data <public> --test-inputs <dir> --out <output> [--seed N]

The harness restores this file and arch.py before every run. It builds the original model (arch.py, as
wide as the original's weights: the task's scale) from `original_model.npz` on `pick_device()`'s device
(CUDA when a GPU is visible to the job, else the CPU), calls the editable `unlearn.unlearn` with the
forget set and the retained images agent code may use, checks that what comes back is a torch module
whose parameters have exactly the architecture's names and shapes and finite values, and writes
`<out>/model.npz` (plain arrays). The evaluator recomputes outputs from those weights on hidden images and runs the
membership-inference attack itself. Both phases run the same unlearning; only the hidden images the
evaluator scores on differ. Nothing printed here is parsed as a metric. The shared pieces (command
line, params, errors, seeding, reading arrays) come from the harness's read-only `task_runtime` package.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

from task_runtime import DriverArgs, DriverError, driver_main, pick_device, read_npz, read_params, seed_everything

HERE = Path(__file__).resolve().parent


def checked_weights(model: object) -> dict[str, np.ndarray]:
    """The returned module's weights in the evaluator's layout, or a one-line reason why not."""
    import torch

    import arch

    if not isinstance(model, torch.nn.Module):
        raise DriverError(f"unlearn must return a torch.nn.Module, got {type(model).__name__}")
    expected = {name: tuple(p.shape) for name, p in arch.make_model().state_dict().items()}
    got = {name: tuple(p.shape) for name, p in model.state_dict().items()}
    if got != expected:
        raise DriverError(f"unlearn must return the architecture of arch.py (parameters {expected}); got {got}"[:400])
    arrays = arch.to_arrays(model)
    bad = [k for k, v in arrays.items() if not np.isfinite(v).all()]
    if bad:
        raise DriverError(f"unlearn returned non-finite weights in {bad}")
    return arrays


def run(args: DriverArgs) -> None:
    sys.path.insert(0, str(HERE))
    import arch

    original = read_npz(args.data / "original_model.npz", tuple(arch.LAYOUT))
    width = original["w1"].shape[-1] if original["w1"].ndim == 2 else 0
    if width < 1:
        raise DriverError(f"original_model.npz: w1 must be a matrix, got shape {original['w1'].shape}")
    arch.set_hidden(width)  # the scale's width (128 at the lite scale), fixed before agent code is imported
    import unlearn  # the agent-editable module, next to this driver

    if not callable(getattr(unlearn, "unlearn", None)):
        raise DriverError("unlearn.py must define unlearn(model, forget_x, forget_y, retain_x, retain_y, params, device)")
    params = read_params(HERE / "params.json")
    forget = read_npz(args.data / "forget.npz", ("x", "y"))
    retain = read_npz(args.data / "retain_subset.npz", ("x", "y"))
    device = pick_device()
    seed_everything(args.seed, import_torch=True)
    started = time.perf_counter()
    model = arch.from_arrays(original).to(device)
    result = unlearn.unlearn(model, forget["x"].copy(), forget["y"].copy(), retain["x"].copy(), retain["y"].copy(),
                             dict(params), device)
    weights = checked_weights(result)
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = args.out / ".model.npz.tmp.npz"
    np.savez(tmp, **weights)
    os.replace(tmp, args.out / "model.npz")
    print(f"[{args.phase}] unlearned {len(forget['y'])} images using {len(retain['y'])} retained ones in "
          f"{time.perf_counter() - started:.1f} s; wrote {args.out / 'model.npz'}", flush=True)


def main(argv: list[str] | None = None) -> int:
    # Both phases run the same unlearning on the public data: the test inputs folder holds nothing to read.
    return driver_main(run, "Run unlearn.py on the original model and save the weights.", ".",
                       "seeds the unlearning's randomness", argv)


if __name__ == "__main__":
    sys.exit(main())
