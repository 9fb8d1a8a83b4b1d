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
  auroc          mean of auroc_near and auroc_far (OOD as the positive class; ties count half, so a
                 constant score has AUROC 0.5)
  auroc_near     in-distribution digits vs unseen digit classes
  auroc_far      in-distribution digits vs natural-image patches
  auroc_all      in-distribution vs all OOD images
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

LABEL_FILES = {"val": "val.csv", "test": "test.csv"}
SCORES_FILE = "scores.csv"
MAX_BYTES = 4 * 1024**2  # ~20 KB expected
TPR = 0.95  # share of in-distribution images the threshold keeps


class InvalidPredictions(Exception):
    """The scores cannot be evaluated; the message is the one line the harness records."""


def load_scores(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise InvalidPredictions(f"{path.name} was not written")
    if path.stat().st_size > MAX_BYTES:
        raise InvalidPredictions(f"{path.name} is larger than {MAX_BYTES} bytes")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InvalidPredictions(f"{path.name} is not a readable CSV: {str(exc).splitlines()[0]}") from None
    missing = [c for c in ("id", "score") if c not in frame.columns]
    if missing:
        raise InvalidPredictions(f"{path.name} lacks columns {missing} (needs id, score)")
    ids = pd.to_numeric(frame["id"], errors="coerce")
    if ids.isna().any() or not np.array_equal(ids, np.round(ids)):
        raise InvalidPredictions(f"{path.name}: column id must hold integers")
    scores = pd.to_numeric(frame["score"], errors="coerce")
    if scores.isna().sum() > frame["score"].isna().sum():
        raise InvalidPredictions(f"{path.name}: column score holds values that are not numbers")
    return pd.DataFrame({"id": ids.astype(np.int64), "score": scores.astype(float)})


def align(scores: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Exactly one finite score for every expected id and nothing else."""
    dup = scores["id"].duplicated()
    if dup.any():
        raise InvalidPredictions(f"{int(dup.sum())} duplicated ids, e.g. {int(scores.loc[dup, 'id'].iloc[0])}")
    merged = labels.merge(scores, on="id", how="outer", indicator=True)
    absent = merged[merged["_merge"] == "left_only"]
    if len(absent):
        raise InvalidPredictions(f"{len(absent)} expected ids are missing, e.g. {int(absent['id'].iloc[0])}")
    extra = merged[merged["_merge"] == "right_only"]
    if len(extra):
        raise InvalidPredictions(f"{len(extra)} unexpected ids, e.g. {int(extra['id'].iloc[0])}")
    bad = ~np.isfinite(merged["score"].to_numpy())
    if bad.any():
        raise InvalidPredictions(f"{int(bad.sum())} scores are NaN or infinite, e.g. id {int(merged.loc[bad, 'id'].iloc[0])}")
    return merged.drop(columns="_merge")


def fpr_at_95_tpr(is_ood: np.ndarray, score: np.ndarray) -> float:
    """Share of OOD images accepted by the lowest threshold that accepts 95% of the in-distribution ones."""
    threshold = np.quantile(score[~is_ood], TPR, method="inverted_cdf")  # >= 95% of ID scores are at or below it
    return float((score[is_ood] <= threshold).mean())


def score(merged: pd.DataFrame) -> dict[str, float]:
    from sklearn.metrics import roc_auc_score

    kind, value = merged["kind"].to_numpy(), merged["score"].to_numpy()
    metrics = {}
    for name, mask in (("near", kind != "far"), ("far", kind != "near"), ("all", np.ones(len(kind), bool))):
        metrics[f"auroc_{name}"] = float(roc_auc_score(kind[mask] != "id", value[mask]))
    metrics["auroc"] = (metrics["auroc_near"] + metrics["auroc_far"]) / 2
    metrics["fpr_at_95_tpr"] = fpr_at_95_tpr(kind != "id", value)
    return metrics


def evaluate_frame(scores: pd.DataFrame, labels_dir: Path, phase: str) -> dict[str, float]:
    labels = pd.read_csv(labels_dir / LABEL_FILES[phase])[["id", "kind"]]
    return score(align(scores, labels))


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    return evaluate_frame(load_scores(predictions_dir / SCORES_FILE), labels_dir, phase)


def write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Score OOD detection scores (FPR at 95% TPR, AUROC).")
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
