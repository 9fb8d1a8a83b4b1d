"""Harness-owned driver for the causal_effect task: runs model.py once per replication, writes predictions.

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

The harness restores this file before every run, so edits to it are discarded. It reads only the
public training data, the inputs to predict and params.json; it never sees labels, and it writes only
`<out>/predictions.csv` (rep, unit, ite). Scores are computed from that file by the task's evaluator
in a separate process; nothing printed here is ever parsed as a metric.
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
KEYS = ["rep", "unit"]
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
        raise DriverError(f"{path.name} lacks columns {missing}")
    return frame


def check_predictions(raw: object, n_rows: int, rep: int) -> np.ndarray:
    """One finite float per input row, in input order; anything else is a clear error, not a silent fix."""
    try:
        values = np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DriverError(f"replication {rep}: estimate_ite must return numbers ({exc})") from None
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.shape != (n_rows,):
        raise DriverError(f"replication {rep}: estimate_ite returned shape {values.shape}; "
                          f"expected ({n_rows},), one effect per input row")
    bad = int((~np.isfinite(values)).sum())
    if bad:
        raise DriverError(f"replication {rep}: estimate_ite returned {bad} non-finite values (NaN or inf)")
    return values


def run(phase: str, data: Path, inputs_path: Path, out: Path, seed: int) -> int:
    sys.path.insert(0, str(HERE))
    import model  # the agent-editable module, next to this driver

    if not callable(getattr(model, "estimate_ite", None)):
        raise DriverError("model.py must define estimate_ite(train, inputs, params) -> array of effects")
    params = read_params(HERE / "params.json")
    train = read_table(data / "train.csv", KEYS + ["t", "y"])
    covariates = [c for c in train.columns if c not in KEYS + ["t", "y"]]
    inputs = read_table(inputs_path, KEYS + covariates)

    frames = []
    started = time.perf_counter()
    for rep in sorted(inputs["rep"].unique()):
        rep_train = train[train["rep"] == rep].set_index("unit")[covariates + ["t", "y"]]
        rep_inputs = inputs[inputs["rep"] == rep].set_index("unit")[covariates]
        if rep_train.empty:
            raise DriverError(f"replication {rep} has inputs but no training rows")
        random.seed(seed + int(rep))  # agent code that draws from the global RNGs stays reproducible
        np.random.seed(seed + int(rep))
        t0 = time.perf_counter()
        rep_params = {**params, "seed": seed + int(rep)}  # the run's seed, for model code's own RNGs
        effects = check_predictions(model.estimate_ite(rep_train.copy(), rep_inputs.copy(), rep_params),
                                    len(rep_inputs), int(rep))
        frames.append(pd.DataFrame({"rep": int(rep), "unit": rep_inputs.index.to_numpy(), "ite": effects}))
        print(f"[{phase}] replication {rep}: {len(rep_train)} train rows, {len(rep_inputs)} inputs, "
              f"{time.perf_counter() - t0:.2f} s", flush=True)

    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".predictions.csv.tmp"
    pd.concat(frames, ignore_index=True).to_csv(tmp, index=False, lineterminator="\n")
    os.replace(tmp, out / "predictions.csv")
    print(f"[{phase}] wrote {out / 'predictions.csv'} for {len(frames)} replications "
          f"in {time.perf_counter() - started:.1f} s", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run model.py on the causal_effect task's data.")
    parser.add_argument("--phase", choices=["val", "test"], required=True)
    parser.add_argument("--data", type=Path, required=True, help="public data dir (train.csv, val_inputs.csv)")
    parser.add_argument("--test-inputs", type=Path, help="dir with test_inputs.csv (test phase only)")
    parser.add_argument("--out", type=Path, required=True, help="where predictions.csv is written")
    parser.add_argument("--seed", type=int, default=0, help="seeds the global RNGs before each replication")
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
