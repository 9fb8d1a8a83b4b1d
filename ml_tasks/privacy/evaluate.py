"""Score digit predictions for the privacy task: accuracy against the hidden labels.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it (and in this task no agent
code runs at all: the driver trains from a declarative recipe). The score comes only from
`<predictions-dir>/predictions.csv` (id, label). Invalid predictions (missing, duplicated or unknown
ids, labels outside 0..9) print one line to stderr and exit 1 without writing metrics.

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

N_CLASSES = 10
PHASES = ("val", "test")


class InvalidPredictions(Exception):
    """The predictions cannot be scored; the message is the one line the harness records."""


def load_predictions(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise InvalidPredictions(f"{path.name} was not written")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidPredictions(f"{path.name} is not a readable CSV: {str(exc).splitlines()[0][:120]}") from None
    missing = [c for c in ("id", "label") if c not in frame.columns]
    if missing:
        raise InvalidPredictions(f"{path.name} lacks columns {missing} (needs id, label)")
    frame = frame[["id", "label"]].copy()
    for col in ("id", "label"):
        values = pd.to_numeric(frame[col], errors="coerce")
        if values.isna().any() or not np.array_equal(values, np.round(values)):
            raise InvalidPredictions(f"{path.name}: column {col} must hold integers")
        frame[col] = values.astype(np.int64)
    if not frame["label"].between(0, N_CLASSES - 1).all():
        raise InvalidPredictions(f"{path.name}: labels must be digits 0..{N_CLASSES - 1}")
    return frame


def align(pred: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    dup = pred.duplicated("id")
    if dup.any():
        raise InvalidPredictions(f"{int(dup.sum())} duplicated ids, e.g. {int(pred.loc[dup, 'id'].iloc[0])}")
    merged = labels.merge(pred, on="id", how="outer", indicator=True, suffixes=("_true", "_pred"))
    absent = merged[merged["_merge"] == "left_only"]
    if len(absent):
        raise InvalidPredictions(f"{len(absent)} expected ids are missing, e.g. {int(absent['id'].iloc[0])}")
    extra = merged[merged["_merge"] == "right_only"]
    if len(extra):
        raise InvalidPredictions(f"{len(extra)} unexpected ids, e.g. {int(extra['id'].iloc[0])}")
    return merged


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    labels = pd.read_csv(labels_dir / f"{phase}_labels.csv")
    merged = align(load_predictions(predictions_dir / "predictions.csv"), labels)
    truth, pred = merged["label_true"].to_numpy(), merged["label_pred"].to_numpy()
    recalls = [np.mean(pred[truth == c] == c) for c in range(N_CLASSES) if (truth == c).any()]
    return {"accuracy": float(np.mean(pred == truth)), "balanced_accuracy": float(np.mean(recalls))}


def write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Score digit predictions (accuracy) for the privacy task.")
    parser.add_argument("--phase", choices=PHASES, required=True)
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
