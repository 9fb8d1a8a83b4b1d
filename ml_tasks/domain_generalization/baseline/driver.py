"""Harness-owned driver of the domain_generalization task: fits model.py on the training environments
and writes one 0/1 prediction per input row.

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

The harness restores this file before every run, so edits to it are discarded. It reads the public
training set, the inputs and params.json; it never sees targets or which environment an input
belongs to. It calls the editable `model.fit(x, y, env, params, device)` once, then
`model.predict(model_, x)` on the inputs in chunks of CHUNK rows, twice, in two different orders: a
prediction must depend on its own row only, so the two passes must agree (a model that adapts to the
batch it is shown, e.g. to the test environment's colour statistics, is rejected). It writes
`<out>/predictions.csv` (id, label).
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
FEATURES = [f"x{i}" for i in range(128)]
PIXEL_MAX = 16.0
CHUNK = 32


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


def read_table(path: Path, required: list[str]) -> pd.DataFrame:
    if not path.is_file():
        raise DriverError(f"expected data file {path} does not exist")
    frame = pd.read_csv(path)
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise DriverError(f"{path.name} lacks columns {missing[:3]}")
    return frame


def features(frame: pd.DataFrame) -> np.ndarray:
    return (frame[FEATURES].to_numpy(dtype=np.float32) / PIXEL_MAX).astype(np.float32)


def pick_device() -> str:
    """CUDA when the sandbox exposes a GPU (the manifest asked for one), else CPU."""
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(seed)


def predict_in_chunks(model, fitted, x: np.ndarray, order: np.ndarray) -> np.ndarray:
    labels = np.empty(len(x), dtype=np.int64)
    for start in range(0, len(x), CHUNK):
        idx = order[start:start + CHUNK]
        try:
            raw = np.asarray(model.predict(fitted, x[idx].copy()), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise DriverError(f"predict must return numbers ({exc})") from None
        if raw.ndim == 2 and raw.shape[1] == 1:
            raw = raw[:, 0]
        if raw.shape != (len(idx),):
            raise DriverError(f"predict returned shape {raw.shape} for {len(idx)} rows; expected ({len(idx)},)")
        if not np.isin(raw, (0.0, 1.0)).all():
            raise DriverError("predict must return labels 0 or 1")
        labels[idx] = raw.astype(np.int64)
    return labels


def run(phase: str, data: Path, inputs_path: Path, out: Path, seed: int) -> int:
    sys.path.insert(0, str(HERE))
    import model  # the agent-editable module, next to this driver

    for name in ("fit", "predict"):
        if not callable(getattr(model, name, None)):
            raise DriverError("model.py must define fit(x, y, env, params, device) and predict(model, x)")
    params = read_params(HERE / "params.json")
    train = read_table(data / "train.csv", ["env", "label"] + FEATURES)
    inputs = read_table(inputs_path, ["id"] + FEATURES)
    device = pick_device()
    seed_everything(seed)
    started = time.perf_counter()
    fitted = model.fit(features(train), train["label"].to_numpy(dtype=np.int64),
                       train["env"].to_numpy(dtype=np.int64), dict(params), device)
    x_in = features(inputs)
    first = predict_in_chunks(model, fitted, x_in, np.arange(len(x_in)))
    second = predict_in_chunks(model, fitted, x_in, np.random.default_rng(seed + 1).permutation(len(x_in)))
    if not np.array_equal(first, second):
        row = int(np.flatnonzero(first != second)[0])
        raise DriverError(f"predict is not a function of each row alone: row id {int(inputs['id'].iloc[row])} "
                          f"got {first[row]} and {second[row]} in two passes")
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".predictions.csv.tmp"
    pd.DataFrame({"id": inputs["id"].to_numpy(), "label": first}).to_csv(tmp, index=False, lineterminator="\n")
    os.replace(tmp, out / "predictions.csv")
    print(f"[{phase}] fitted on {len(train)} rows ({device}, seed {seed}), predicted {len(x_in)} inputs "
          f"in {time.perf_counter() - started:.1f} s; wrote {out / 'predictions.csv'}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fit model.py on the training environments and predict the inputs.")
    parser.add_argument("--phase", choices=["val", "test"], required=True)
    parser.add_argument("--data", type=Path, required=True, help="public data dir (train.csv, val_inputs.csv)")
    parser.add_argument("--test-inputs", type=Path, help="dir with test_inputs.csv (test phase only)")
    parser.add_argument("--out", type=Path, required=True, help="where predictions.csv is written")
    parser.add_argument("--seed", type=int, default=0, help="seeds python, numpy and torch before fitting")
    args = parser.parse_args(argv)
    if args.phase == "test" and args.test_inputs is None:
        parser.error("--phase test needs --test-inputs")
    inputs = args.data / "val_inputs.csv" if args.phase == "val" else args.test_inputs / "test_inputs.csv"
    try:
        return run(args.phase, args.data, inputs, args.out, args.seed)
    except DriverError as exc:
        print(f"driver error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
