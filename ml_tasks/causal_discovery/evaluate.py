"""Score predicted causal graphs for the causal_discovery task against the hidden true DAGs.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it. The score comes only from
`<predictions-dir>/predictions.csv` (dataset, source, target: one row per predicted edge source ->
target; a pair listed in both directions is an undirected edge). Invalid predictions (unknown
datasets, node ids out of range, self-loops, duplicated rows, non-integer ids) print one line to
stderr and exit 1 without writing metrics. A dataset with no rows is an empty graph.

Metrics, per dataset then averaged over the phase's datasets:
  shd          structural Hamming distance: node pairs whose state (no edge, i->j, j->i, undirected)
               differs from the truth; a reversed or undirected true edge costs 1. Primary, lower is better
  f1           F1 of directed edges (an undirected pair counts as both directions predicted)
  skeleton_f1  F1 of adjacencies, ignoring direction
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import InvalidPredictions, evaluator_main, integer_column, read_predictions

COLUMNS = ["dataset", "source", "target"]


def load_predictions(path: Path, n_nodes: dict[str, int]) -> pd.DataFrame:
    frame = read_predictions(path, COLUMNS, dtype={"dataset": str})
    # a cell pandas reads as missing ("", "nan", "NA") is a name no dataset has, not a crash
    unknown = sorted({"<missing>" if pd.isna(name) else str(name) for name in frame["dataset"]} - set(n_nodes))
    if unknown:
        raise InvalidPredictions(f"{path.name} names unknown datasets, e.g. {unknown[0][:40]!r}")
    frame["dataset"] = frame["dataset"].astype(str)
    for col in ("source", "target"):
        frame[col] = integer_column(frame, col, path.name, "integer node ids")
    limit = frame["dataset"].map(n_nodes).astype(np.int64)  # every name is known (checked above); an empty
    # frame keeps the name column's string dtype through map, which pyarrow-backed pandas cannot compare to ints
    bad = (frame["source"] < 0) | (frame["target"] < 0) | (frame["source"] >= limit) | (frame["target"] >= limit)
    if bad.any():
        row = frame[bad].iloc[0]
        raise InvalidPredictions(f"node id out of range in dataset {row.dataset}: {row.source} -> {row.target}")
    if (frame["source"] == frame["target"]).any():
        row = frame[frame["source"] == frame["target"]].iloc[0]
        raise InvalidPredictions(f"self-loop in dataset {row.dataset}: node {row.source}")
    dup = frame.duplicated(COLUMNS)
    if dup.any():
        row = frame[dup].iloc[0]
        raise InvalidPredictions(f"{int(dup.sum())} duplicated edges, e.g. {row.dataset}: {row.source} -> {row.target}")
    return frame


def adjacency(edges: pd.DataFrame, n: int) -> np.ndarray:
    matrix = np.zeros((n, n), dtype=bool)
    matrix[edges["source"].to_numpy(dtype=np.int64), edges["target"].to_numpy(dtype=np.int64)] = True
    return matrix


def _f1(pred: np.ndarray, true: np.ndarray) -> float:
    hits = int((pred & true).sum())
    if hits == 0:
        return 0.0
    precision, recall = hits / int(pred.sum()), hits / int(true.sum())
    return 2 * precision * recall / (precision + recall)


def graph_scores(pred: np.ndarray, true: np.ndarray) -> dict[str, float]:
    """SHD over unordered pairs (state = (i->j, j->i)), directed-edge F1 and skeleton F1."""
    upper = np.triu(np.ones_like(true, dtype=bool), k=1)
    differs = (pred != true) | (pred.T != true.T)  # either direction of the pair disagrees
    skeleton_pred, skeleton_true = (pred | pred.T) & upper, (true | true.T) & upper
    return {"shd": float((differs & upper).sum()), "f1": _f1(pred, true),
            "skeleton_f1": _f1(skeleton_pred, skeleton_true)}


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    datasets = pd.read_csv(labels_dir / f"{phase}_datasets.csv", dtype={"dataset": str})
    truth = pd.read_csv(labels_dir / f"{phase}_edges.csv", dtype={"dataset": str})
    n_nodes = dict(zip(datasets["dataset"], datasets["n_nodes"].astype(int)))
    pred = load_predictions(predictions_dir / "predictions.csv", n_nodes)
    per_dataset = [graph_scores(adjacency(pred[pred["dataset"] == name], n),
                                adjacency(truth[truth["dataset"] == name], n)) for name, n in n_nodes.items()]
    return {key: float(np.mean([s[key] for s in per_dataset])) for key in per_dataset[0]}


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Score predicted DAGs (SHD) for the causal_discovery task.", argv)


if __name__ == "__main__":
    sys.exit(main())
