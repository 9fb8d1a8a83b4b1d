"""Score the continual_learning task: accuracy matrix, average accuracy after the last split, forgetting.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it. Reads only
`<predictions-dir>/predictions.csv` (after_split, id, label): one predicted class for every scored
input after each of the 5 splits. Anything else (a missing, duplicated or unknown row, a label
outside 0..9, a missing split) prints one line to stderr and exits 1 without writing metrics.

With A[k][j] the accuracy, after training on splits 0..k, on the scored inputs whose class belongs
to split j (classes 2j and 2j+1):
  average_accuracy   mean_j A[4][j]                                   the primary metric, higher is better
  final_accuracy     accuracy on all scored inputs after the last split
  forgetting         mean over j < 4 of max_{j <= k < 4} A[k][j] - A[4][j]   (Chaudhry et al. 2018)
  acc_after_split_k  mean_{j <= k} A[k][j]                             the learning curve
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import InvalidPredictions, evaluator_main, integer_column, read_predictions

N_SPLITS = 5
N_CLASSES = 10
LABEL_FILES = {"val": "val_labels.csv", "test": "test_labels.csv"}
COLUMNS = ["after_split", "id", "label"]


def load_predictions(path: Path) -> pd.DataFrame:
    frame = read_predictions(path, COLUMNS, dtype=str, keep_default_na=False)
    return pd.DataFrame({c: integer_column(frame, c, path.name) for c in COLUMNS})


def accuracy_matrix(pred: pd.DataFrame, labels: pd.DataFrame) -> np.ndarray:
    """A[k][j]; checks that every split predicts every scored id exactly once and nothing else."""
    if not pred["label"].between(0, N_CLASSES - 1).all():
        raise InvalidPredictions(f"labels must lie in 0..{N_CLASSES - 1}")
    if set(pred["after_split"].unique()) != set(range(N_SPLITS)):
        raise InvalidPredictions(f"after_split must cover exactly 0..{N_SPLITS - 1}")
    if pred.duplicated(["after_split", "id"]).any():
        raise InvalidPredictions("duplicated (after_split, id) rows")
    expected = set(labels["id"])
    matrix = np.zeros((N_SPLITS, N_SPLITS))
    split_of = labels["y"].to_numpy() // 2
    for k, group in pred.groupby("after_split"):
        ids = set(group["id"])
        if ids != expected:
            absent, extra = len(expected - ids), len(ids - expected)
            raise InvalidPredictions(f"after split {k}: {absent} expected ids missing, {extra} unexpected ids")
        merged = labels.merge(group, on="id", how="left")
        correct = (merged["label"].to_numpy() == merged["y"].to_numpy())
        for j in range(N_SPLITS):
            matrix[k, j] = correct[split_of == j].mean()
    return matrix


def score(matrix: np.ndarray, labels: pd.DataFrame, pred: pd.DataFrame) -> dict[str, float]:
    last = pred[pred["after_split"] == N_SPLITS - 1].merge(labels, on="id")
    metrics = {
        "average_accuracy": float(matrix[-1].mean()),
        "final_accuracy": float((last["label"] == last["y"]).mean()),
        "forgetting": float(np.mean([matrix[j:N_SPLITS - 1, j].max() - matrix[-1, j] for j in range(N_SPLITS - 1)])),
    }
    for k in range(N_SPLITS):
        metrics[f"acc_after_split_{k}"] = float(matrix[k, :k + 1].mean())
    return metrics


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    labels = pd.read_csv(labels_dir / LABEL_FILES[phase])
    pred = load_predictions(predictions_dir / "predictions.csv")
    return score(accuracy_matrix(pred, labels), labels, pred)


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Score class-incremental predictions (average accuracy).", argv)


if __name__ == "__main__":
    sys.exit(main())
