"""Harness-owned driver of the adversarial_robustness task: trains model.py's network, exports its weights.

    python driver.py --phase val|test --data <public dir> --out <output dir> [--seed N]

The harness restores this file (and family.py) before every run, so edits to them are discarded. It
reads only the public training set and params.json, calls the editable `model.train_model`, checks
that it returned a `family.RobustMLP`, and writes its weights to `<out>/model.safetensors`. The
val and test phases train the same way; the evaluator then attacks the network, rebuilt from the
weights alone, on the validation or the hidden test images. Nothing printed here is parsed as a
metric.
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
import pandas as pd

HERE = Path(__file__).resolve().parent
PIXELS = [f"p{i}" for i in range(64)]
PIXEL_MAX = 16.0  # digits pixels are integers 0..16; models see them scaled to [0, 1]


class DriverError(Exception):
    """A problem with the inputs or with what model.py returned: reported as one line, exit 1."""


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


def read_train(data: Path) -> tuple[np.ndarray, np.ndarray]:
    path = data / "train.csv"
    if not path.is_file():
        raise DriverError(f"expected data file {path} does not exist")
    frame = pd.read_csv(path)
    missing = [c for c in PIXELS + ["label"] if c not in frame.columns]
    if missing:
        raise DriverError(f"{path.name} lacks columns {missing[:3]}")
    x = (frame[PIXELS].to_numpy(dtype=np.float32) / PIXEL_MAX).astype(np.float32)
    return x, frame["label"].to_numpy(dtype=np.int64)


def pick_device() -> str:
    """CUDA when the sandbox exposes a GPU (the manifest asked for one), else CPU."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def run(phase: str, data: Path, out: Path, seed: int) -> int:
    sys.path.insert(0, str(HERE))
    import torch

    import family
    import model  # the agent-editable module, next to this driver
    from safetensors.numpy import save_file

    if not callable(getattr(model, "train_model", None)):
        raise DriverError("model.py must define train_model(x, y, params, device) -> family.RobustMLP")
    params = read_params(HERE / "params.json")
    x, y = read_train(data)
    device = pick_device()
    seed_everything(seed)
    started = time.perf_counter()
    net = model.train_model(x.copy(), y.copy(), dict(params), device)
    if not isinstance(net, family.RobustMLP):
        raise DriverError(f"train_model returned {type(net).__name__}; it must return a family.RobustMLP")
    try:
        tensors = family.to_tensors(net)
        family.from_tensors(tensors)  # the evaluator's checks, early, with a clearer message
    except family.FamilyError as exc:
        raise DriverError(f"the returned network is outside the model family: {exc}") from None
    with torch.no_grad():
        check = family.from_tensors(tensors)
        train_acc = float((check(torch.from_numpy(x)).argmax(1).numpy() == y).mean())
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".model.safetensors.tmp"
    save_file(tensors, str(tmp), metadata={"hidden": json.dumps(net.hidden)})
    os.replace(tmp, out / "model.safetensors")
    print(f"[{phase}] trained on {len(y)} images ({device}, seed {seed}) in {time.perf_counter() - started:.1f} s; "
          f"hidden {net.hidden}; clean train accuracy {train_acc:.4f}; wrote {out / 'model.safetensors'}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Train model.py's network on the digits training set.")
    parser.add_argument("--phase", choices=["val", "test"], required=True)
    parser.add_argument("--data", type=Path, required=True, help="public data dir (train.csv)")
    parser.add_argument("--out", type=Path, required=True, help="where model.safetensors is written")
    parser.add_argument("--seed", type=int, default=0, help="seeds python, numpy and torch before training")
    args = parser.parse_args(argv)
    try:
        return run(args.phase, args.data, args.out, args.seed)
    except DriverError as exc:
        print(f"driver error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
