"""Score binary predictions for the fairness task: accuracy, charged for the parity gap of the decisions.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it. The score comes only from
`<predictions-dir>/predictions.csv` (id, pred with pred in {0, 1}). Invalid predictions (missing,
duplicated or unknown ids, values other than 0/1) print one line to stderr and exit 1 without writing
metrics.

The same rule on val and test, an audit of the decisions themselves. `dpd`, the demographic-parity
difference of the rows decided, is charged past a tolerance, the largest gap that rounding one common
positive rate to whole people can leave: `tolerance = 1/(2 n0) + 1/(2 n1)` (0.0016 on 774 and 499 rows),
so equal quotas per group are never charged. Each point of gap beyond it costs three points of accuracy:

    accuracy_at_parity = max(0, accuracy - 3 * max(0, dpd - tolerance))

The score degrades smoothly (2.x scored 0 past a limit of 0.005): a decision set 0.001 past the tolerance
loses 0.003. A classifier fair only in expectation (its rates match on training rows, or on average
over its randomization) shows the sampling noise of the gap on a batch, a standard deviation of about
0.02 on 1273 rows at the rates chosen here, and pays about 0.04 for it on average. A constant
predictor's rates are equal: it scores its accuracy, the majority label's being the floor.

Metrics:
  accuracy_at_parity  primary, higher is better: max(0, accuracy - 3 * max(0, dpd - tolerance))
  dpd                 |P(pred=1 | a=1) - P(pred=1 | a=0)| on the rows scored
  tolerance           1/(2 n0) + 1/(2 n1) for the rows scored (n_g: rows of group g)
  parity_penalty      3 * max(0, dpd - tolerance), the accuracy the gap cost
  eod                 equalized-odds difference: max over y of |P(pred=1 | a=1, y) - P(pred=1 | a=0, y)|
  accuracy            fraction of correct predictions
  meets_parity        1.0 if dpd <= tolerance else 0.0
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import InvalidPredictions, evaluator_main, integer_column, match_ids, read_predictions

PENALTY = 3.0  # accuracy lost per unit of parity gap beyond the tolerance; also in description.md and the manifest


def load_predictions(path: Path) -> pd.DataFrame:
    frame = read_predictions(path, ["id", "pred"])
    frame["id"] = integer_column(frame, "id", path.name)
    pred = pd.to_numeric(frame["pred"], errors="coerce")
    if pred.isna().any() or not pred.isin([0, 1]).all():
        raise InvalidPredictions(f"{path.name}: column pred must hold only 0 or 1")
    frame["pred"] = pred.astype(int)
    return frame


def tolerance(a: np.ndarray) -> float:
    """The largest gap equal quotas can leave: each group's rate rounded to whole people, 1/(2 n0) + 1/(2 n1)."""
    n0, n1 = int(np.sum(a == 0)), int(np.sum(a == 1))
    return 0.5 / n0 + 0.5 / n1


def score(merged: pd.DataFrame) -> dict[str, float]:
    y, a, p = (merged[c].to_numpy(dtype=int) for c in ("y", "a", "pred"))
    accuracy = float(np.mean(p == y))
    dpd = float(abs(p[a == 1].mean() - p[a == 0].mean()))
    eod = max(abs(p[(a == 1) & (y == v)].mean() - p[(a == 0) & (y == v)].mean()) for v in (0, 1))
    tol = tolerance(a)
    penalty = PENALTY * max(0.0, dpd - tol)
    return {"accuracy_at_parity": max(0.0, accuracy - penalty), "dpd": dpd, "tolerance": tol,
            "parity_penalty": penalty, "eod": float(eod), "accuracy": accuracy, "meets_parity": float(dpd <= tol)}


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    labels = pd.read_csv(labels_dir / f"{phase}_labels.csv")
    return score(match_ids(load_predictions(predictions_dir / "predictions.csv"), labels, ["id"]))


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Score predictions (accuracy, charged for the parity gap past the tolerance).",
                          argv)


if __name__ == "__main__":
    sys.exit(main())
