"""Score ITE predictions for the causal_effect task against the hidden true effects.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it. The score comes only from
`<predictions-dir>/predictions.csv`. Invalid predictions (missing, duplicated or unexpected rows,
non-numeric or non-finite values) print one line to stderr and exit 1 without writing metrics.

Metrics, each computed per replication and then averaged over replications (as in the causality task):
  pehe          sqrt(mean((ite_hat - ite)^2))            the primary metric, lower is better
  ite_mae       mean(|ite_hat - ite|)
  ate_abs_error |mean(ite_hat) - mean(ite)|
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

KEYS = ["rep", "unit"]
LABEL_FILES = {"val": "val_ite.csv", "test": "test_ite.csv"}


class InvalidPredictions(Exception):
    """The predictions cannot be scored; the message is the one line the harness records."""


def load_predictions(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise InvalidPredictions(f"{path.name} was not written")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InvalidPredictions(f"{path.name} is not a readable CSV: {str(exc).splitlines()[0]}") from None
    missing = [c for c in KEYS + ["ite"] if c not in frame.columns]
    if missing:
        raise InvalidPredictions(f"{path.name} lacks columns {missing} (needs rep, unit, ite)")
    frame = frame[KEYS + ["ite"]].copy()
    for col in KEYS:
        keys = pd.to_numeric(frame[col], errors="coerce")
        if keys.isna().any() or not np.array_equal(keys, np.round(keys)):
            raise InvalidPredictions(f"{path.name}: column {col} must hold integers")
        frame[col] = keys.astype(np.int64)
    ite = pd.to_numeric(frame["ite"], errors="coerce")
    if ite.isna().sum() > frame["ite"].isna().sum():
        raise InvalidPredictions(f"{path.name}: column ite holds values that are not numbers")
    frame["ite"] = ite.astype(float)
    return frame


def align(pred: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Exactly one finite prediction for every labelled (rep, unit) and nothing else."""
    dup = pred.duplicated(KEYS)
    if dup.any():
        rep, unit = pred.loc[dup, KEYS].iloc[0]
        raise InvalidPredictions(f"{int(dup.sum())} duplicated (rep, unit) rows, e.g. rep {rep} unit {unit}")
    merged = labels.merge(pred, on=KEYS, how="outer", indicator=True)
    absent = merged[merged["_merge"] == "left_only"]
    if len(absent):
        rep, unit = absent[KEYS].iloc[0]
        raise InvalidPredictions(f"{len(absent)} expected (rep, unit) rows are missing, e.g. rep {rep} unit {unit}")
    extra = merged[merged["_merge"] == "right_only"]
    if len(extra):
        rep, unit = extra[KEYS].iloc[0]
        raise InvalidPredictions(f"{len(extra)} unexpected (rep, unit) rows, e.g. rep {rep} unit {unit}")
    bad = ~np.isfinite(merged["ite_pred"].to_numpy())
    if bad.any():
        rep, unit = merged.loc[bad, KEYS].iloc[0]
        raise InvalidPredictions(f"{int(bad.sum())} predictions are NaN or infinite, e.g. rep {rep} unit {unit}")
    return merged.drop(columns="_merge")


def score(merged: pd.DataFrame) -> dict[str, float]:
    per_rep = []
    for _, group in merged.groupby("rep", sort=True):
        err = group["ite_pred"].to_numpy() - group["ite_true"].to_numpy()
        per_rep.append((np.sqrt(np.mean(err ** 2)), np.mean(np.abs(err)), abs(np.mean(err))))
    pehe, mae, ate = np.mean(per_rep, axis=0)
    return {"pehe": float(pehe), "ite_mae": float(mae), "ate_abs_error": float(ate)}


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    labels = pd.read_csv(labels_dir / LABEL_FILES[phase]).rename(columns={"ite": "ite_true"})
    pred = load_predictions(predictions_dir / "predictions.csv").rename(columns={"ite": "ite_pred"})
    return score(align(pred, labels))


def write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Score ITE predictions (PEHE) for the causal_effect task.")
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
