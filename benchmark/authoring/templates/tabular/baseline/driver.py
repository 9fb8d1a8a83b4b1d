"""Harness-owned driver for the __TASK_NAME__ task: trains model.py on the public data, writes predictions.

    python driver.py --phase val  --data <public dir> --out <output dir> --seed N
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> --seed N

The harness restores this file before every run, so edits to it are discarded. It reads only the public
training data, the inputs to predict and params.json; it never sees labels, and it writes only
`<out>/predictions.csv` (id, label). The evaluator scores that file in a separate sandbox; nothing
printed here is parsed as a metric.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent


class DriverError(Exception):
    """A problem with the inputs or with what model.py returned: one line, exit 1."""


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


def check_predictions(raw: object, n_rows: int) -> np.ndarray:
    """One integer label per input row, in input order; anything else is a clear error, not a silent fix."""
    try:
        values = np.asarray(raw, dtype=float).reshape(-1) if np.ndim(raw) > 0 else np.asarray([raw], dtype=float)
    except (TypeError, ValueError) as exc:
        raise DriverError(f"fit_predict must return numbers ({exc})") from None
    if values.shape != (n_rows,):
        raise DriverError(f"fit_predict returned {values.shape[0]} values; expected {n_rows}, one per input row")
    if not np.all(np.isfinite(values)) or not np.array_equal(values, np.round(values)):
        raise DriverError("fit_predict must return integer class labels")
    return values.astype(np.int64)


def run(data: Path, inputs_path: Path, out: Path, seed: int) -> int:
    sys.path.insert(0, str(HERE))
    import model  # the agent-editable module, next to this driver

    if not callable(getattr(model, "fit_predict", None)):
        raise DriverError("model.py must define fit_predict(train_x, train_y, inputs_x, params, seed)")
    params = read_params(HERE / "params.json")
    train = pd.read_csv(data / "train.csv")
    inputs = pd.read_csv(inputs_path)
    features = [c for c in train.columns if c not in ("id", "label")]
    random.seed(seed)  # agent code that draws from the global RNGs stays reproducible
    np.random.seed(seed)
    labels = check_predictions(model.fit_predict(train[features].copy(), train["label"].to_numpy(),
                                                 inputs[features].copy(), dict(params), seed), len(inputs))
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".predictions.csv.tmp"
    pd.DataFrame({"id": inputs["id"], "label": labels}).to_csv(tmp, index=False, lineterminator="\n")
    os.replace(tmp, out / "predictions.csv")
    print(f"trained on {len(train)} rows, predicted {len(inputs)} rows", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run model.py on the __TASK_NAME__ task's data.")
    parser.add_argument("--phase", choices=["val", "test"], required=True)
    parser.add_argument("--data", type=Path, required=True, help="public data dir (train.csv, val_inputs.csv)")
    parser.add_argument("--test-inputs", type=Path, help="dir with test_inputs.csv (test phase only)")
    parser.add_argument("--out", type=Path, required=True, help="where predictions.csv is written")
    parser.add_argument("--seed", type=int, default=0, help="seed of all training randomness")
    args = parser.parse_args(argv)
    if args.phase == "test" and args.test_inputs is None:
        parser.error("--phase test needs --test-inputs")
    inputs = args.data / "val_inputs.csv" if args.phase == "val" else args.test_inputs / "test_inputs.csv"
    try:
        return run(args.data, inputs, args.out, args.seed)
    except DriverError as exc:
        print(f"driver error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
