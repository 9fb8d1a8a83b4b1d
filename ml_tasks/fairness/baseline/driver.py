"""Harness-owned driver for the fairness task: runs model.py once, writes the predictions.

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

The harness restores this file before every run, so edits to it are discarded. It reads only the
public training data, the inputs to predict and params.json, and writes `<out>/predictions.csv`
(id, pred). The evaluator scores that file in a separate process.
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


def check_predictions(raw: object, n_rows: int) -> np.ndarray:
    try:
        values = np.asarray(raw, dtype=float).reshape(-1) if np.ndim(raw) == 2 and np.shape(raw)[1] == 1 \
            else np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DriverError(f"fit_predict must return numbers ({exc})") from None
    if values.shape != (n_rows,):
        raise DriverError(f"fit_predict returned shape {values.shape}; expected ({n_rows},), one label per input row")
    if not np.all(np.isin(values, (0.0, 1.0))):
        raise DriverError("fit_predict must return hard labels 0 or 1 (threshold your scores yourself)")
    return values.astype(int)


def run(phase: str, data: Path, inputs_path: Path, out: Path, seed: int) -> int:
    sys.path.insert(0, str(HERE))
    import model  # the agent-editable module, next to this driver

    if not callable(getattr(model, "fit_predict", None)):
        raise DriverError("model.py must define fit_predict(train, inputs, params) -> array of 0/1")
    params = read_params(HERE / "params.json")
    train = pd.read_csv(data / "train.csv").set_index("id")
    inputs = pd.read_csv(inputs_path).set_index("id")
    random.seed(seed)
    np.random.seed(seed)
    started = time.perf_counter()
    pred = check_predictions(model.fit_predict(train.copy(), inputs.copy(), {**params, "seed": seed}), len(inputs))
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".predictions.csv.tmp"
    pd.DataFrame({"id": inputs.index.to_numpy(), "pred": pred}).to_csv(tmp, index=False, lineterminator="\n")
    os.replace(tmp, out / "predictions.csv")
    rates = [pred[inputs["a"].to_numpy() == g].mean() for g in (0, 1)]
    print(f"[{phase}] {len(train)} train rows, {len(inputs)} inputs; positive rate a=0 {rates[0]:.3f}, "
          f"a=1 {rates[1]:.3f}; {time.perf_counter() - started:.1f} s", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run model.py on the fairness task's data.")
    parser.add_argument("--phase", choices=["val", "test"], required=True)
    parser.add_argument("--data", type=Path, required=True, help="public data dir (train.csv, val_inputs.csv)")
    parser.add_argument("--test-inputs", type=Path, help="dir with test_inputs.csv (test phase only)")
    parser.add_argument("--out", type=Path, required=True, help="where predictions.csv is written")
    parser.add_argument("--seed", type=int, default=0, help="seeds the global RNGs; also passed as params['seed']")
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
