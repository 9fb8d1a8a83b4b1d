"""Score class predictions for the __TASK_NAME__ task against the hidden labels.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own sandbox on the harness side; agent code never sees it. Its input is hostile: it reads
only `<predictions-dir>/predictions.csv`, requires exactly one prediction for every expected id and
nothing else, and accepts only labels that exist in the task. Invalid predictions print one line to
stderr (about the predictions only, never about the labels) and exit 1 without writing metrics. The
reading, id matching and error contract come from the harness's read-only `task_runtime` package.

Metrics: accuracy (primary, higher is better) and balanced_accuracy (mean per-class recall).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import InvalidPredictions, evaluator_main, integer_column, match_ids, read_predictions

LABEL_FILES = {"val": "val_labels.csv", "test": "test_labels.csv"}
CLASSES = (0, 1)  # TODO(author): the labels your task allows


def load_predictions(path: Path) -> pd.DataFrame:
    frame = read_predictions(path, ["id", "label"])
    return pd.DataFrame({col: integer_column(frame, col, path.name) for col in ("id", "label")})


def align(pred: pd.DataFrame, truth: pd.DataFrame) -> pd.DataFrame:
    """Exactly one allowed label for every expected id, and no other id."""
    unknown = ~pred["label"].isin(CLASSES)
    if unknown.any():
        raise InvalidPredictions(f"{int(unknown.sum())} labels outside {list(CLASSES)}, "
                                 f"e.g. {int(pred.loc[unknown, 'label'].iloc[0])}")
    return match_ids(pred, truth, ["id"], suffixes=("_true", "_pred"))


def score(merged: pd.DataFrame) -> dict[str, float]:
    truth, pred = merged["label_true"].to_numpy(), merged["label_pred"].to_numpy()
    recalls = [float(np.mean(pred[truth == c] == c)) for c in np.unique(truth)]
    return {"accuracy": float(np.mean(truth == pred)), "balanced_accuracy": float(np.mean(recalls))}


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    truth = pd.read_csv(labels_dir / LABEL_FILES[phase])
    return score(align(load_predictions(predictions_dir / "predictions.csv"), truth))


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Score class predictions for the __TASK_NAME__ task.", argv)


if __name__ == "__main__":
    sys.exit(main())
