"""Score the federated_learning task: accuracy of the final global model on the scored inputs.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it. Reads only
`<predictions-dir>/predictions.csv` (id, label): one class in 0..9 for every scored input. Anything
else (a missing, duplicated or unknown id, a non-integer or out-of-range label) prints one line to
stderr and exits 1 without writing metrics.

  accuracy            share of scored inputs classified correctly   primary, higher is better
  balanced_accuracy   mean per-class recall (the clients' label skew makes some classes rare locally)
  worst_class_recall  the recall of the class the global model handles worst
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

N_CLASSES = 10
LABEL_FILES = {"val": "val_labels.csv", "test": "test_labels.csv"}
COLUMNS = ["id", "label"]


class InvalidPredictions(Exception):
    """The predictions cannot be scored; the message is the one line the harness records."""


def integer_column(frame: pd.DataFrame, col: str, name: str) -> np.ndarray:
    values = pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=float)
    if not np.isfinite(values).all() or not np.array_equal(values, np.round(values)):
        raise InvalidPredictions(f"{name}: column {col} must hold integers")
    return values.astype(np.int64)


def load_predictions(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise InvalidPredictions(f"{path.name} was not written")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidPredictions(f"{path.name} is not a readable CSV: {str(exc).splitlines()[0][:200]}") from None
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise InvalidPredictions(f"{path.name} lacks columns {missing} (needs {', '.join(COLUMNS)})")
    return pd.DataFrame({c: integer_column(frame, c, path.name) for c in COLUMNS})


def align(pred: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    if pred["id"].duplicated().any():
        raise InvalidPredictions(f"{int(pred['id'].duplicated().sum())} duplicated ids")
    if not pred["label"].between(0, N_CLASSES - 1).all():
        raise InvalidPredictions(f"labels must lie in 0..{N_CLASSES - 1}")
    expected, got = set(labels["id"]), set(pred["id"])
    if expected != got:
        raise InvalidPredictions(f"{len(expected - got)} expected ids missing, {len(got - expected)} unexpected ids")
    return labels.merge(pred, on="id")


def score(merged: pd.DataFrame) -> dict[str, float]:
    correct = merged["label"].to_numpy() == merged["y"].to_numpy()
    recalls = [correct[merged["y"].to_numpy() == c].mean() for c in range(N_CLASSES)]
    return {"accuracy": float(correct.mean()), "balanced_accuracy": float(np.mean(recalls)),
            "worst_class_recall": float(np.min(recalls))}


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    labels = pd.read_csv(labels_dir / LABEL_FILES[phase])
    return score(align(load_predictions(predictions_dir / "predictions.csv"), labels))


def write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Score the global model's predictions (accuracy).")
    parser.add_argument("--phase", choices=sorted(LABEL_FILES), required=True)
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
