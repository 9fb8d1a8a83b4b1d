"""Harness-owned driver for the causal_discovery task: runs model.py once per dataset, writes the graphs.

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

The harness restores this file before every run, so edits to it are discarded. It reads only the
phase's datasets (samples, never graphs: no true graph exists anywhere agent code runs) and
params.json, and writes `<out>/predictions.csv` (dataset, source, target: one row per predicted edge).
Scores are computed from that file by the task's evaluator in a separate process. The shared pieces
(command line, params, errors, seeding, writing) come from the harness's read-only `task_runtime`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import DriverArgs, DriverError, driver_main, read_params, seed_everything, write_predictions

HERE = Path(__file__).resolve().parent


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


def run(args: DriverArgs) -> None:
    sys.path.insert(0, str(HERE))
    import model  # the agent-editable module, next to this driver

    if not callable(getattr(model, "discover", None)):
        raise DriverError("model.py must define discover(x, params) -> adjacency matrix")
    params = read_params(HERE / "params.json")
    files = sorted(args.inputs.glob("*.csv"))
    if not files:
        raise DriverError(f"no datasets (*.csv) in {args.inputs}")
    rows = []
    started = time.perf_counter()
    for index, path in enumerate(files):
        x = pd.read_csv(path).to_numpy(dtype=float)
        seed_everything(args.seed + index, import_torch=True)  # agent code that draws from global RNGs reproduces
        t0 = time.perf_counter()
        graph = check_graph(model.discover(x.copy(), dict(params)), x.shape[1], path.stem)
        rows += [(path.stem, int(s), int(t)) for s, t in zip(*np.nonzero(graph))]
        print(f"[{args.phase}] dataset {path.stem}: {x.shape[0]} samples x {x.shape[1]} variables, "
              f"{int(graph.sum())} edges, {time.perf_counter() - t0:.2f} s", flush=True)
    path = write_predictions(args.out, pd.DataFrame(rows, columns=["dataset", "source", "target"]))
    print(f"[{args.phase}] wrote {path} for {len(files)} datasets in {time.perf_counter() - started:.1f} s",
          flush=True)


def main(argv: list[str] | None = None) -> int:
    return driver_main(run, "Run model.py on the causal_discovery task's datasets.", inputs="{phase}",
                       seed_help="seeds the global RNGs before each dataset", argv=argv)


if __name__ == "__main__":
    sys.exit(main())
