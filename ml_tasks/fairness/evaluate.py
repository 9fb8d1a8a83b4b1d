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

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import InvalidPredictions, evaluator_main, integer_column, match_ids, read_predictions

PARITY_TOLERANCE = 0.005  # also stated in description.md and the manifest; change all three together
WORST = 0.0


def load_predictions(path: Path) -> pd.DataFrame:
    frame = read_predictions(path, ["id", "pred"])
    frame["id"] = integer_column(frame, "id", path.name)
    pred = pd.to_numeric(frame["pred"], errors="coerce")
    if pred.isna().any() or not pred.isin([0, 1]).all():
        raise InvalidPredictions(f"{path.name}: column pred must hold only 0 or 1")
    frame["pred"] = pred.astype(int)
    return frame


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
    return score(match_ids(load_predictions(predictions_dir / "predictions.csv"), labels, ["id"]))


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Score predictions (accuracy of decisions that meet demographic parity).", argv)


if __name__ == "__main__":
    sys.exit(main())
