"""Score binary predictions for the fairness task: accuracy of decisions that meet demographic parity.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it. The score comes only from
`<predictions-dir>/predictions.csv` (id, pred with pred in {0, 1}). Invalid predictions (missing,
duplicated or unknown ids, values other than 0/1) print one line to stderr and exit 1 without writing
metrics.

The same rule on val and test, a quota audit of the decisions themselves: the positive rates of the
two groups among the rows decided must differ by at most PARITY_TOLERANCE (a couple of people per
group). Decisions that pass score their accuracy; decisions that do not score 0.0, the worst value.
A classifier that is fair only in expectation (its rates match on training rows, or on average over
its randomization) misses the audit on a given batch by its sampling noise, about 0.01-0.02 here.
A constant predictor passes (both rates are equal) with the majority-label accuracy, the floor.

Metrics:
  accuracy_at_parity  primary, higher is better: accuracy if dpd <= PARITY_TOLERANCE, else 0.0
  dpd                 |P(pred=1 | a=1) - P(pred=1 | a=0)| on the rows scored
  eod                 equalized-odds difference: max over y of |P(pred=1 | a=1, y) - P(pred=1 | a=0, y)|
  accuracy            fraction of correct predictions
  meets_parity        1.0 if dpd <= PARITY_TOLERANCE else 0.0
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

PARITY_TOLERANCE = 0.005  # also stated in description.md and the manifest; change all three together
WORST = 0.0
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
    missing = [c for c in ("id", "pred") if c not in frame.columns]
    if missing:
        raise InvalidPredictions(f"{path.name} lacks columns {missing} (needs id, pred)")
    frame = frame[["id", "pred"]].copy()
    ids = pd.to_numeric(frame["id"], errors="coerce")
    if ids.isna().any() or not np.array_equal(ids, np.round(ids)):
        raise InvalidPredictions(f"{path.name}: column id must hold integers")
    frame["id"] = ids.astype(np.int64)
    pred = pd.to_numeric(frame["pred"], errors="coerce")
    if pred.isna().any() or not pred.isin([0, 1]).all():
        raise InvalidPredictions(f"{path.name}: column pred must hold only 0 or 1")
    frame["pred"] = pred.astype(int)
    return frame


def align(pred: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    dup = pred.duplicated("id")
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
    y, a, p = (merged[c].to_numpy(dtype=int) for c in ("y", "a", "pred"))
    accuracy = float(np.mean(p == y))
    dpd = abs(p[a == 1].mean() - p[a == 0].mean())
    eod = max(abs(p[(a == 1) & (y == v)].mean() - p[(a == 0) & (y == v)].mean()) for v in (0, 1))
    meets = dpd <= PARITY_TOLERANCE
    return {"accuracy_at_parity": accuracy if meets else WORST, "dpd": float(dpd), "eod": float(eod),
            "accuracy": accuracy, "meets_parity": float(meets)}


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    labels = pd.read_csv(labels_dir / f"{phase}_labels.csv")
    return score(align(load_predictions(predictions_dir / "predictions.csv"), labels))


def write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Score predictions (accuracy of decisions that meet demographic parity).")
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
