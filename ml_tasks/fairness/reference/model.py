"""Reference solution that sets the target (never shown to agents; the task folder is masked).

Group-aware post-processing applied to the decisions themselves: the policy that maximizes expected
accuracy under demographic parity thresholds calibrated risk scores separately per group
(Corbett-Davies et al. 2017; Hardt et al. 2016 fit such thresholds on training rows). Here the
thresholds are quotas on the batch being decided: select the top k0 rows of group 0 and the top k1 of
group 1 by predicted risk, choosing (k0, k1) to maximize the expected score under the model's own
probabilities, i.e. expected accuracy minus the evaluator's charge for the parity gap beyond its
tolerance (stated in the task description). The batch then meets parity by construction, not only in
expectation. The risk model is a small gradient-boosted ensemble (depth-limited trees, the group a
feature). Since 4.0.0 the labels are drawn from a hidden model and the scale's 1.0 is the same quotas
on the true probabilities (benchmarks/oracle_fairness.py); this reference is held to
checks.reference_score instead.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier

DEFAULTS = {"learning_rate": 0.03, "max_iter": 200, "max_leaf_nodes": 4}
PENALTY = 3.0  # the evaluator's charge per unit of parity gap past its tolerance, as the task description states it


def ranked(risk: np.ndarray, groups: np.ndarray, g: int) -> np.ndarray:
    """Rows of group g, highest risk first (ties broken by row order)."""
    rows = np.flatnonzero(groups == g)
    return rows[np.lexsort((rows, -risk[rows]))]


def decide(risk: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """1 for the top k0 of group 0 and the top k1 of group 1, (k0, k1) maximizing the expected score."""
    order = [ranked(risk, groups, g) for g in (0, 1)]
    n0, n1, n = len(order[0]), len(order[1]), len(risk)
    gain = [np.concatenate([[0.0], np.cumsum(2.0 * risk[o] - 1.0)]) for o in order]  # expected correct, added
    k0, k1 = np.arange(n0 + 1)[:, None], np.arange(n1 + 1)[None, :]
    tolerance = 0.5 / n0 + 0.5 / n1  # the largest gap equal quotas can leave (rounding to whole people)
    expected = (np.sum(1.0 - risk) + gain[0][:, None] + gain[1][None, :]) / n \
        - PENALTY * np.maximum(0.0, np.abs(k1 / n1 - k0 / n0) - tolerance)
    best0, best1 = np.unravel_index(int(np.argmax(expected)), expected.shape)
    chosen = np.zeros(n, dtype=int)
    chosen[order[0][:best0]] = 1
    chosen[order[1][:best1]] = 1
    return chosen


def fit_predict(train: pd.DataFrame, inputs: pd.DataFrame, params: dict) -> np.ndarray:
    p = {**DEFAULTS, **params}
    features = [c for c in train.columns if c != "y"]
    model = HistGradientBoostingClassifier(learning_rate=float(p["learning_rate"]), max_iter=int(p["max_iter"]),
                                           max_leaf_nodes=int(p["max_leaf_nodes"]), random_state=0)
    model.fit(train[features], train["y"])
    return decide(model.predict_proba(inputs[features])[:, 1], inputs["a"].to_numpy())
