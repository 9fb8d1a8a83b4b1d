"""Harness-owned driver for the causal_discovery task: runs model.py once per dataset, writes the graphs.

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

The harness restores this file before every run, so edits to it are discarded. It reads only the
phase's datasets (samples, never graphs: no true graph exists anywhere agent code runs) and
params.json, and writes `<out>/predictions.csv` (dataset, source, target: one row per predicted edge).
Scores are computed from that file by the task's evaluator in a separate process.
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


def check_graph(raw: object, n_nodes: int, name: str) -> np.ndarray:
    """A d x d matrix of 0/1 (or booleans) with a zero diagonal; anything else is a clear error."""
    try:
        matrix = np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DriverError(f"dataset {name}: discover must return a matrix of numbers ({exc})") from None
    if matrix.shape != (n_nodes, n_nodes):
        raise DriverError(f"dataset {name}: discover returned shape {matrix.shape}; expected ({n_nodes}, {n_nodes})")
    if not np.all(np.isin(matrix, (0.0, 1.0))):
        raise DriverError(f"dataset {name}: the adjacency matrix must hold only 0 and 1 (threshold weights yourself)")
    if np.any(np.diag(matrix) != 0):
        raise DriverError(f"dataset {name}: the adjacency matrix has self-loops on its diagonal")
    return matrix.astype(bool)


def run(phase: str, inputs: Path, out: Path, seed: int) -> int:
    sys.path.insert(0, str(HERE))
    import model  # the agent-editable module, next to this driver

    if not callable(getattr(model, "discover", None)):
        raise DriverError("model.py must define discover(x, params) -> adjacency matrix")
    params = read_params(HERE / "params.json")
    files = sorted(inputs.glob("*.csv"))
    if not files:
        raise DriverError(f"no datasets (*.csv) in {inputs}")
    rows = []
    started = time.perf_counter()
    for index, path in enumerate(files):
        frame = pd.read_csv(path)
        x = frame.to_numpy(dtype=float)
        random.seed(seed + index)  # agent code that draws from the global RNGs stays reproducible
        np.random.seed(seed + index)
        try:
            import torch

            torch.manual_seed(seed + index)
        except ImportError:
            pass
        t0 = time.perf_counter()
        graph = check_graph(model.discover(x.copy(), dict(params)), x.shape[1], path.stem)
        rows += [(path.stem, int(s), int(t)) for s, t in zip(*np.nonzero(graph))]
        print(f"[{phase}] dataset {path.stem}: {x.shape[0]} samples x {x.shape[1]} variables, "
              f"{int(graph.sum())} edges, {time.perf_counter() - t0:.2f} s", flush=True)

    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".predictions.csv.tmp"
    pd.DataFrame(rows, columns=["dataset", "source", "target"]).to_csv(tmp, index=False, lineterminator="\n")
    os.replace(tmp, out / "predictions.csv")
    print(f"[{phase}] wrote {out / 'predictions.csv'} for {len(files)} datasets "
          f"in {time.perf_counter() - started:.1f} s", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run model.py on the causal_discovery task's datasets.")
    parser.add_argument("--phase", choices=["val", "test"], required=True)
    parser.add_argument("--data", type=Path, required=True, help="public data dir (val/*.csv)")
    parser.add_argument("--test-inputs", type=Path, help="dir with test/*.csv (test phase only)")
    parser.add_argument("--out", type=Path, required=True, help="where predictions.csv is written")
    parser.add_argument("--seed", type=int, default=0, help="seeds the global RNGs before each dataset")
    args = parser.parse_args(argv)
    if args.phase == "test" and args.test_inputs is None:
        parser.error("--phase test needs --test-inputs")
    inputs = args.data / "val" if args.phase == "val" else args.test_inputs / "test"
    try:
        return run(args.phase, inputs, args.out, args.seed)
    except DriverError as exc:
        print(f"driver error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
