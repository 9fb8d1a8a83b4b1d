"""Harness-owned driver of the unlearning task: hands the original model to `unlearn`, saves its weights.

    python driver.py --phase val|test --data <public> --out <output> [--seed N]

The harness restores this file and arch.py before every run. It builds the original model (arch.py)
from `original_model.npz`, calls the editable `unlearn.unlearn` with the forget set and the retained
images agent code may use, checks that what comes back is a torch module whose parameters have
exactly the architecture's names and shapes and finite values, and writes `<out>/model.npz` (plain
arrays). The evaluator recomputes outputs from those weights on hidden images and runs the
membership-inference attack itself. Both phases run the same unlearning; only the hidden images the
evaluator scores on differ. Nothing printed here is parsed as a metric.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


class DriverError(Exception):
    """A problem with the inputs or with what unlearn.py returned: reported as one line, exit 1."""


def read_params(path: Path) -> dict:
    try:
        params = json.loads(path.read_text())
    except FileNotFoundError:
        raise DriverError(f"{path.name} is missing; it must hold a JSON object of hyper-parameters") from None
    except json.JSONDecodeError as exc:
        raise DriverError(f"{path.name} is not valid JSON: {exc}") from None
    if not isinstance(params, dict):
        raise DriverError(f"{path.name} must hold a JSON object, got {type(params).__name__}")
    return params


def read_npz(path: Path, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise DriverError(f"expected data file {path} does not exist")
    with np.load(path, allow_pickle=False) as data:
        missing = [k for k in keys if k not in data.files]
        if missing:
            raise DriverError(f"{path.name} lacks arrays {missing}")
        return {k: data[k] for k in keys}


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


def run(phase: str, data: Path, out: Path, seed: int) -> int:
    sys.path.insert(0, str(HERE))
    import torch

    import arch
    import unlearn  # the agent-editable module, next to this driver

    if not callable(getattr(unlearn, "unlearn", None)):
        raise DriverError("unlearn.py must define unlearn(model, forget_x, forget_y, retain_x, retain_y, params, device)")
    params = read_params(HERE / "params.json")
    original = read_npz(data / "original_model.npz", tuple(arch.LAYOUT))
    forget = read_npz(data / "forget.npz", ("x", "y"))
    retain = read_npz(data / "retain_subset.npz", ("x", "y"))
    device = "cuda" if os.environ.get("CUDA_VISIBLE_DEVICES", "").strip() and torch.cuda.is_available() else "cpu"
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    started = time.perf_counter()
    model = arch.from_arrays(original).to(device)
    result = unlearn.unlearn(model, forget["x"].copy(), forget["y"].copy(), retain["x"].copy(), retain["y"].copy(),
                             dict(params), device)
    weights = checked_weights(result)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".model.npz.tmp.npz"
    np.savez(tmp, **weights)
    os.replace(tmp, out / "model.npz")
    print(f"[{phase}] unlearned {len(forget['y'])} images using {len(retain['y'])} retained ones in "
          f"{time.perf_counter() - started:.1f} s; wrote {out / 'model.npz'}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run unlearn.py on the original model and save the weights.")
    parser.add_argument("--phase", choices=["val", "test"], required=True)
    parser.add_argument("--data", type=Path, required=True, help="public data dir")
    parser.add_argument("--out", type=Path, required=True, help="where model.npz is written")
    parser.add_argument("--seed", type=int, default=0, help="seeds the unlearning's randomness")
    args = parser.parse_args(argv)
    try:
        return run(args.phase, args.data, args.out, args.seed)
    except DriverError as exc:
        print(f"driver error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
