"""Score digit predictions for the semi_supervised task: accuracy on the validation or hidden test images.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it. The score comes only from
`<predictions-dir>/predictions.csv` (id, label). Invalid files (missing, duplicated or unexpected
ids, labels other than 0..9, oversized) print one line to stderr and exit 1 without writing metrics.

Metrics:
  accuracy                 fraction of images whose digit is predicted correctly: the primary metric
  balanced_accuracy        mean per-class recall
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
PREDICTIONS_FILE = "predictions.csv"
N_CLASSES = 10
MAX_BYTES = 4 * 1024**2  # ~10 KB expected


class InvalidPredictions(Exception):
    """The predictions cannot be scored; the message is the one line the harness records."""


def load_predictions(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise InvalidPredictions(f"{path.name} was not written")
    if path.stat().st_size > MAX_BYTES:
        raise InvalidPredictions(f"{path.name} is larger than {MAX_BYTES} bytes")
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
    if not out["label"].isin(range(N_CLASSES)).all():
        raise InvalidPredictions(f"{path.name}: column label must hold digits 0..{N_CLASSES - 1}")
    return pd.DataFrame(out)


def align(pred: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Exactly one prediction for every expected id and nothing else."""
    dup = pred["id"].duplicated()
    if dup.any():
        raise InvalidPredictions(f"{int(dup.sum())} duplicated ids, e.g. {int(pred.loc[dup, 'id'].iloc[0])}")
    merged = labels.merge(pred, on="id", how="outer", indicator=True)
    absent = merged[merged["_merge"] == "left_only"]
    if len(absent):
        raise InvalidPredictions(f"{len(absent)} expected ids are missing, e.g. {int(absent['id'].iloc[0])}")
    extra = merged[merged["_merge"] == "right_only"]
    if len(extra):
        raise InvalidPredictions(f"{len(extra)} unexpected ids, e.g. {int(extra['id'].iloc[0])}")
    return merged.drop(columns="_merge")


def score(merged: pd.DataFrame) -> dict[str, float]:
    truth, pred = merged["target"].to_numpy(), merged["label"].to_numpy()
    correct = pred == truth
    recalls = [correct[truth == c].mean() for c in np.unique(truth)]
    return {"accuracy": float(correct.mean()), "balanced_accuracy": float(np.mean(recalls))}


def evaluate_frame(pred: pd.DataFrame, labels_dir: Path, phase: str) -> dict[str, float]:
    labels = pd.read_csv(labels_dir / LABEL_FILES[phase]).rename(columns={"label": "target"})[["id", "target"]]
    return score(align(pred, labels))


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    return evaluate_frame(load_predictions(predictions_dir / PREDICTIONS_FILE), labels_dir, phase)


def write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Score digit predictions (accuracy).")
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
