"""Score 0/1 predictions for the domain_generalization task: worst-environment accuracy.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it. The score comes only from
`<predictions-dir>/predictions.csv` (id, label). Invalid files (missing, duplicated or unexpected
ids, labels other than 0/1, oversized) print one line to stderr and exit 1 without writing metrics.

Accuracy is measured against the target (the digit's true group: 0 for digits 0-4, 1 for 5-9), not
the noisy observed label, in each evaluation environment:
  worst_env_accuracy   min over the "aligned" and "flipped" environments: the primary metric
  accuracy_aligned     colour correlated with the label as in training
  accuracy_flipped     the correlation reversed
  mean_accuracy        their mean
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
ENVIRONMENTS = ("aligned", "flipped")
MAX_BYTES = 4 * 1024**2  # ~10 KB expected


def load_predictions(path: Path) -> pd.DataFrame:
    frame = read_predictions(path, ["id", "label"], max_bytes=MAX_BYTES)
    ids, labels = integer_column(frame, "id", path.name), integer_column(frame, "label", path.name)
    if not np.isin(labels, (0, 1)).all():
        raise InvalidPredictions(f"{path.name}: column label must hold 0 or 1")
    return pd.DataFrame({"id": ids, "label": labels})


def score(merged: pd.DataFrame) -> dict[str, float]:
    correct = merged["label"].to_numpy() == merged["target"].to_numpy()
    env = merged["env"].to_numpy()
    metrics = {f"accuracy_{e}": float(correct[env == e].mean()) for e in ENVIRONMENTS}
    metrics["worst_env_accuracy"] = min(metrics[f"accuracy_{e}"] for e in ENVIRONMENTS)
    metrics["mean_accuracy"] = float(np.mean([metrics[f"accuracy_{e}"] for e in ENVIRONMENTS]))
    return metrics


def evaluate_frame(pred: pd.DataFrame, labels_dir: Path, phase: str) -> dict[str, float]:
    """Exactly one prediction for every expected id and nothing else, scored."""
    labels = pd.read_csv(labels_dir / LABEL_FILES[phase])[["id", "env", "target"]]
    return score(match_ids(pred, labels, ["id"]))


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    return evaluate_frame(load_predictions(predictions_dir / PREDICTIONS_FILE), labels_dir, phase)


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Score predictions by worst-environment accuracy.", argv)


if __name__ == "__main__":
    sys.exit(main())
