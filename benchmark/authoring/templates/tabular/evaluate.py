"""Score class predictions for the __TASK_NAME__ task against the hidden labels.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own sandbox on the harness side; agent code never sees it. Its input is hostile: it reads
only `<predictions-dir>/predictions.csv`, requires exactly one prediction for every expected id and
nothing else, and accepts only labels that exist in the task. Invalid predictions print one line to
stderr (about the predictions only, never about the labels) and exit 1 without writing metrics.

Metrics: accuracy (primary, higher is better) and balanced_accuracy (mean per-class recall).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

LABEL_FILES = {"val": "val_labels.csv", "test": "test_labels.csv"}
CLASSES = (0, 1)  # TODO(author): the labels your task allows


class InvalidPredictions(Exception):
    """The predictions cannot be scored; the message is the one line the harness records."""


def load_predictions(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise InvalidPredictions(f"{path.name} was not written")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InvalidPredictions(f"{path.name} is not a readable CSV: {str(exc).splitlines()[0]}") from None
    missing = [c for c in ("id", "label") if c not in frame.columns]
    if missing:
        raise InvalidPredictions(f"{path.name} lacks columns {missing} (needs id, label)")
    out = {}
    for col in ("id", "label"):
        values = pd.to_numeric(frame[col], errors="coerce")
        if values.isna().any() or not np.array_equal(values, np.round(values)):
            raise InvalidPredictions(f"{path.name}: column {col} must hold integers")
        out[col] = values.astype(np.int64)
    return pd.DataFrame(out)


def align(pred: pd.DataFrame, truth: pd.DataFrame) -> pd.DataFrame:
    """Exactly one allowed label for every expected id, and no other id."""
    dup = pred["id"].duplicated()
    if dup.any():
        raise InvalidPredictions(f"{int(dup.sum())} duplicated ids, e.g. {int(pred.loc[dup, 'id'].iloc[0])}")
    unknown = ~pred["label"].isin(CLASSES)
    if unknown.any():
        raise InvalidPredictions(f"{int(unknown.sum())} labels outside {list(CLASSES)}, "
                                 f"e.g. {int(pred.loc[unknown, 'label'].iloc[0])}")
    merged = truth.merge(pred, on="id", how="outer", suffixes=("_true", "_pred"), indicator=True)
    absent = merged[merged["_merge"] == "left_only"]
    if len(absent):
        raise InvalidPredictions(f"{len(absent)} expected ids are missing, e.g. {int(absent['id'].iloc[0])}")
    extra = merged[merged["_merge"] == "right_only"]
    if len(extra):
        raise InvalidPredictions(f"{len(extra)} unexpected ids, e.g. {int(extra['id'].iloc[0])}")
    return merged.drop(columns="_merge")


def score(merged: pd.DataFrame) -> dict[str, float]:
    truth, pred = merged["label_true"].to_numpy(), merged["label_pred"].to_numpy()
    recalls = [float(np.mean(pred[truth == c] == c)) for c in np.unique(truth)]
    return {"accuracy": float(np.mean(truth == pred)), "balanced_accuracy": float(np.mean(recalls))}


def write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Score class predictions for the __TASK_NAME__ task.")
    parser.add_argument("--phase", choices=sorted(LABEL_FILES), required=True)
    parser.add_argument("--predictions-dir", type=Path, required=True)
    parser.add_argument("--labels", type=Path, required=True)
    parser.add_argument("--metrics", type=Path, required=True)
    args = parser.parse_args(argv)
    args.metrics.unlink(missing_ok=True)  # a stale file must never pass for this run's score
    truth = pd.read_csv(args.labels / LABEL_FILES[args.phase])
    try:
        metrics = score(align(load_predictions(args.predictions_dir / "predictions.csv"), truth))
    except InvalidPredictions as exc:
        print(str(exc), file=sys.stderr)  # the harness records this line as the bug reason
        return 1
    write_json(args.metrics, {"metrics": metrics})
    return 0


if __name__ == "__main__":
    sys.exit(main())
