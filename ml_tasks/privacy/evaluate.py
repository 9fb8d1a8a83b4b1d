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
0.10, 0.01, 0.05 and AUC 0.5.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

MAX_BYTES = 1 << 20  # 600 rows of id and score are about 15 KB
FPR_LEVELS = {"tpr_at_1pct_fpr": 0.01, "tpr_at_5pct_fpr": 0.05, "tpr_at_10pct_fpr": 0.10}


class InvalidPredictions(Exception):
    """The scores cannot be evaluated; the message is the one line the harness records."""


def load_scores(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise InvalidPredictions(f"{path.name} was not written")
    if path.stat().st_size > MAX_BYTES:
        raise InvalidPredictions(f"{path.name} is larger than {MAX_BYTES} bytes")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidPredictions(f"{path.name} is not a readable CSV: {str(exc).splitlines()[0][:120]}") from None
    if list(frame.columns) != ["id", "score"]:
        raise InvalidPredictions(f"{path.name} must have exactly the columns id, score; got {list(frame.columns)[:5]}")
    ids = pd.to_numeric(frame["id"], errors="coerce")
    if ids.isna().any() or not np.array_equal(ids, np.round(ids)):
        raise InvalidPredictions(f"{path.name}: column id must hold integers")
    scores = pd.to_numeric(frame["score"], errors="coerce").to_numpy(np.float64)
    if not np.isfinite(scores).all():
        raise InvalidPredictions(f"{path.name}: {int((~np.isfinite(scores)).sum())} scores are missing, NaN or infinite")
    return pd.DataFrame({"id": ids.astype(np.int64), "score": scores})


def align(scores: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    dup = scores.duplicated("id")
    if dup.any():
        raise InvalidPredictions(f"{int(dup.sum())} duplicated ids, e.g. {int(scores.loc[dup, 'id'].iloc[0])}")
    merged = labels.merge(scores, on="id", how="outer", indicator=True)
    absent = merged[merged["_merge"] == "left_only"]
    if len(absent):
        raise InvalidPredictions(f"{len(absent)} candidate ids are missing, e.g. {int(absent['id'].iloc[0])}")
    extra = merged[merged["_merge"] == "right_only"]
    if len(extra):
        raise InvalidPredictions(f"{len(extra)} unknown ids, e.g. {int(extra['id'].iloc[0])}")
    return merged


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
    merged = align(load_scores(predictions_dir / "scores.csv"), labels)
    return score(merged["member"].to_numpy(bool), merged["score"].to_numpy(np.float64))


def write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Score membership-inference scores (TPR at 10% FPR).")
    parser.add_argument("--phase", choices=["val", "test"], required=True)
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
