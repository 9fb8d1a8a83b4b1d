"""Reference solution that sets the target (never shown to agents; the task folder is masked).

Group-aware post-processing applied to the decisions themselves: the policy that maximizes expected
accuracy under demographic parity thresholds calibrated risk scores separately per group
(Corbett-Davies et al. 2017; Hardt et al. 2016 fit such thresholds on training rows). Here the
thresholds are quotas on the batch being decided: choose one selection rate r, select the top r of
each group by predicted risk, and pick r to maximize the expected accuracy under the model's own
probabilities. The batch then meets parity exactly (up to one person per group), not only in
expectation. The risk model is a logistic regression on one-hot features, the group included.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

DEFAULTS = {"C": 0.3, "rates": 201}


def select_top(risk: np.ndarray, groups: np.ndarray, rate: float) -> np.ndarray:
    """1 for the round(rate * n_g) highest-risk rows of each group g (ties broken by row order)."""
    chosen = np.zeros(len(risk), dtype=int)
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        ranked = rows[np.lexsort((rows, -risk[rows]))]
        chosen[ranked[:int(round(rate * len(rows)))]] = 1
    return chosen


def fit_predict(train: pd.DataFrame, inputs: pd.DataFrame, params: dict) -> np.ndarray:
    p = {**DEFAULTS, **params}
    features = [c for c in train.columns if c != "y"]
    model = make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression(C=float(p["C"]), max_iter=3000))
    model.fit(train[features], train["y"])
    risk = model.predict_proba(inputs[features])[:, 1]
    groups = inputs["a"].to_numpy()
    best, best_gain = None, -np.inf
    for rate in np.linspace(0.0, 1.0, int(p["rates"])):
        chosen = select_top(risk, groups, rate)
        gain = float(np.sum(np.where(chosen == 1, risk, 1.0 - risk)))  # expected number of correct decisions
        if gain > best_gain:
            best, best_gain = chosen, gain
    return best
