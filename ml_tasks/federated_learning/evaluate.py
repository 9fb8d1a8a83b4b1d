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

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import InvalidPredictions, evaluator_main, integer_column, read_predictions

N_CLASSES = 10
LABEL_FILES = {"val": "val_labels.csv", "test": "test_labels.csv"}
COLUMNS = ["id", "label"]


def load_predictions(path: Path) -> pd.DataFrame:
    frame = read_predictions(path, COLUMNS, dtype=str, keep_default_na=False)
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


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Score the global model's predictions (accuracy).", argv)


if __name__ == "__main__":
    sys.exit(main())
