"""Score the privacy task's membership-inference scores: true-positive rate at a 10% false-positive rate.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it. Reads only
`<predictions-dir>/scores.csv` (id, score: higher = more likely a member): every candidate id of the
phase exactly once, finite scores. Anything else prints one line to stderr and exits 1 without writing
metrics.

Metrics, from the ROC curve of the scores against the hidden membership labels (sklearn's roc_curve;
tied scores form one step, so the curve is the expectation over random tie-breaking):
  tpr_at_10pct_fpr   the share of members caught when 10% of non-members are flagged (primary, higher is
                     better): the curve's highest TPR at FPR 0.10 (`tpr_at`)
  tpr_at_1pct_fpr, tpr_at_5pct_fpr   the same at 1% and 5%
  auc                area under the ROC curve
A score that carries no membership information has TPR = FPR in expectation: a constant scores exactly
0.10, 0.01, 0.05 and AUC 0.5. Reading, id matching and the command line come from the harness's
`task_runtime` package.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import InvalidPredictions, evaluator_main, integer_column, match_ids, read_predictions

MAX_BYTES = 1 << 20  # 500 rows of id and score are about 13 KB
FPR_LEVELS = {"tpr_at_1pct_fpr": 0.01, "tpr_at_5pct_fpr": 0.05, "tpr_at_10pct_fpr": 0.10}


def load_scores(path: Path) -> pd.DataFrame:
    frame = read_predictions(path, ["id", "score"], max_bytes=MAX_BYTES, dtype=str, keep_default_na=False)
    ids = integer_column(frame, "id", path.name)
    scores = pd.to_numeric(frame["score"], errors="coerce").to_numpy(np.float64)
    if not np.isfinite(scores).all():
        raise InvalidPredictions(f"{path.name}: {int((~np.isfinite(scores)).sum())} scores are missing, NaN or infinite")
    return pd.DataFrame({"id": ids, "score": scores})


def tpr_at(fpr: np.ndarray, tpr: np.ndarray, level: float) -> float:
    """The ROC curve's highest TPR at FPR `level`: the last point at or below it (the top of a vertical
    step, when one ends exactly there), else the line to the next point (a tie group spanning `level`)."""
    k = int(np.searchsorted(fpr, level, side="right")) - 1
    if fpr[k] == level or k == len(fpr) - 1:
        return float(tpr[k])
    return float(tpr[k] + (tpr[k + 1] - tpr[k]) * (level - fpr[k]) / (fpr[k + 1] - fpr[k]))


def score(member: np.ndarray, scores: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import roc_auc_score, roc_curve

    fpr, tpr, _ = roc_curve(member, scores, drop_intermediate=False)
    metrics = {name: tpr_at(fpr, tpr, level) for name, level in FPR_LEVELS.items()}
    metrics["auc"] = float(roc_auc_score(member, scores))
    return metrics


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    labels = pd.read_csv(labels_dir / f"{phase}_membership.csv")
    merged = match_ids(load_scores(predictions_dir / "scores.csv"), labels, ["id"])
    return score(merged["member"].to_numpy(bool), merged["score"].to_numpy(np.float64))


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Score membership-inference scores (TPR at 10% FPR).", argv)


if __name__ == "__main__":
    sys.exit(main())
