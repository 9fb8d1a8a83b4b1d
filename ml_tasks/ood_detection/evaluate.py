"""Score OOD scores for the ood_detection task against the hidden in/out labels.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it. The score comes only from
`<predictions-dir>/scores.csv` (id, score; higher = more likely OOD). Invalid files (missing,
duplicated or unexpected ids, non-numeric or non-finite scores, oversized) print one line to stderr
and exit 1 without writing metrics.

Metrics:
  fpr_at_95_tpr  the primary metric, lower is better (FPR at 95% TPR, as in Liang et al. 2018):
                 the threshold keeps the 95% of in-distribution images with the lowest scores
                 (TPR 95%, in-distribution as the positive class); the fraction of OOD images scored
                 at or below it, i.e. accepted as in-distribution. An OOD image tied with the
                 threshold counts as accepted, so a constant score gives 1.0 and random scores about
                 0.95.
  auroc          mean of auroc_novel and auroc_altered (OOD as the positive class; ties count half, so a
                 constant score has AUROC 0.5)
  auroc_novel    in-distribution glyphs vs glyphs of unseen classes
  auroc_altered  in-distribution glyphs vs structurally altered glyphs of the training classes
  auroc_all      in-distribution vs all OOD images
Reading, id matching and the command line come from the harness's `task_runtime` package.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import InvalidPredictions, evaluator_main, integer_column, match_ids, read_predictions

LABEL_FILES = {"val": "val.csv", "test": "test.csv"}
SCORES_FILE = "scores.csv"
MAX_BYTES = 4 * 1024**2  # ~30 KB expected
TPR = 0.95  # share of in-distribution images the threshold keeps


def load_scores(path: Path) -> pd.DataFrame:
    frame = read_predictions(path, ["id", "score"], max_bytes=MAX_BYTES)
    ids = integer_column(frame, "id", path.name)
    scores = pd.to_numeric(frame["score"], errors="coerce")
    if scores.isna().sum() > frame["score"].isna().sum():
        raise InvalidPredictions(f"{path.name}: column score holds values that are not numbers")
    return pd.DataFrame({"id": ids, "score": scores.astype(float)})


def align(scores: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Exactly one finite score for every expected id and nothing else."""
    merged = match_ids(scores, labels, ["id"])
    bad = ~np.isfinite(merged["score"].to_numpy())
    if bad.any():
        raise InvalidPredictions(f"{int(bad.sum())} scores are NaN or infinite, e.g. id {int(merged.loc[bad, 'id'].iloc[0])}")
    return merged


def fpr_at_95_tpr(is_ood: np.ndarray, score: np.ndarray) -> float:
    """Share of OOD images accepted by the lowest threshold that accepts 95% of the in-distribution ones."""
    threshold = np.quantile(score[~is_ood], TPR, method="inverted_cdf")  # >= 95% of ID scores are at or below it
    return float((score[is_ood] <= threshold).mean())


def score(merged: pd.DataFrame) -> dict[str, float]:
    from sklearn.metrics import roc_auc_score

    kind, value = merged["kind"].to_numpy(), merged["score"].to_numpy()
    metrics = {}
    for name, mask in (("novel", kind != "altered"), ("altered", kind != "novel"), ("all", np.ones(len(kind), bool))):
        metrics[f"auroc_{name}"] = float(roc_auc_score(kind[mask] != "id", value[mask]))
    metrics["auroc"] = (metrics["auroc_novel"] + metrics["auroc_altered"]) / 2
    metrics["fpr_at_95_tpr"] = fpr_at_95_tpr(kind != "id", value)
    return metrics


def evaluate_frame(scores: pd.DataFrame, labels_dir: Path, phase: str) -> dict[str, float]:
    labels = pd.read_csv(labels_dir / LABEL_FILES[phase])[["id", "kind"]]
    return score(align(scores, labels))


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    return evaluate_frame(load_scores(predictions_dir / SCORES_FILE), labels_dir, phase)


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Score OOD detection scores (FPR at 95% TPR, AUROC).", argv)


if __name__ == "__main__":
    sys.exit(main())
