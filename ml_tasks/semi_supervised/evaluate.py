"""Score digit predictions for the semi_supervised task: accuracy on the validation or hidden test images.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it. The score comes only from
`<predictions-dir>/predictions.csv` (id, label). Invalid files (missing, duplicated or unexpected
ids, labels other than 0..9, oversized) print one line to stderr and exit 1 without writing metrics.

Metrics:
  accuracy                 fraction of images whose digit is predicted correctly: the primary metric
  balanced_accuracy        mean per-class recall
Reading, id matching and the command line come from the harness's `task_runtime` package.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import InvalidPredictions, evaluator_main, integer_column, match_ids, read_predictions

LABEL_FILES = {"val": "val.csv", "test": "test.csv"}
PREDICTIONS_FILE = "predictions.csv"
N_CLASSES = 10
MAX_BYTES = 4 * 1024**2  # ~10 KB expected


def load_predictions(path: Path) -> pd.DataFrame:
    frame = read_predictions(path, ["id", "label"], max_bytes=MAX_BYTES)
    ids, labels = integer_column(frame, "id", path.name), integer_column(frame, "label", path.name)
    if not np.isin(labels, np.arange(N_CLASSES)).all():
        raise InvalidPredictions(f"{path.name}: column label must hold digits 0..{N_CLASSES - 1}")
    return pd.DataFrame({"id": ids, "label": labels})


def score(merged: pd.DataFrame) -> dict[str, float]:
    truth, pred = merged["target"].to_numpy(), merged["label"].to_numpy()
    correct = pred == truth
    recalls = [correct[truth == c].mean() for c in np.unique(truth)]
    return {"accuracy": float(correct.mean()), "balanced_accuracy": float(np.mean(recalls))}


def evaluate_frame(pred: pd.DataFrame, labels_dir: Path, phase: str) -> dict[str, float]:
    """Exactly one prediction for every expected id and nothing else, scored."""
    labels = pd.read_csv(labels_dir / LABEL_FILES[phase]).rename(columns={"label": "target"})[["id", "target"]]
    return score(match_ids(pred, labels, ["id"]))


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    return evaluate_frame(load_predictions(predictions_dir / PREDICTIONS_FILE), labels_dir, phase)


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Score digit predictions (accuracy).", argv)


if __name__ == "__main__":
    sys.exit(main())
