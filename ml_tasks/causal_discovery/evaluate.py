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

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

COLUMNS = ["dataset", "source", "target"]
PHASES = ("val", "test")


class InvalidPredictions(Exception):
    """The predictions cannot be scored; the message is the one line the harness records."""


def load_predictions(path: Path, n_nodes: dict[str, int]) -> pd.DataFrame:
    if not path.is_file():
        raise InvalidPredictions(f"{path.name} was not written")
    try:
        frame = pd.read_csv(path, dtype={"dataset": str})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidPredictions(f"{path.name} is not a readable CSV: {str(exc).splitlines()[0][:120]}") from None
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise InvalidPredictions(f"{path.name} lacks columns {missing} (needs dataset, source, target)")
    frame = frame[COLUMNS].copy()
    unknown = sorted(set(frame["dataset"].astype(str)) - set(n_nodes))
    if unknown:
        raise InvalidPredictions(f"{path.name} names unknown datasets, e.g. {unknown[0][:40]!r}")
    frame["dataset"] = frame["dataset"].astype(str)
    for col in ("source", "target"):
        ids = pd.to_numeric(frame[col], errors="coerce")
        if ids.isna().any() or not np.array_equal(ids, np.round(ids)):
            raise InvalidPredictions(f"{path.name}: column {col} must hold integer node ids")
        frame[col] = ids.astype(np.int64)
    limit = frame["dataset"].map(n_nodes)
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


def write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Score predicted DAGs (SHD) for the causal_discovery task.")
    parser.add_argument("--phase", choices=PHASES, required=True)
    parser.add_argument("--predictions-dir", type=Path, required=True)
    parser.add_argument("--labels", type=Path, required=True)
    parser.add_argument("--metrics", type=Path, required=True)
    args = parser.parse_args(argv)
    args.metrics.unlink(missing_ok=True)  # a stale file must never pass for this run's score
    try:
        metrics = evaluate(args.phase, args.predictions_dir, args.labels)
    except InvalidPredictions as exc:
        print(str(exc), file=sys.stderr)  # the harness records this line as the bug reason
        return 1
    write_json(args.metrics, {"metrics": metrics})
    return 0


if __name__ == "__main__":
    sys.exit(main())
