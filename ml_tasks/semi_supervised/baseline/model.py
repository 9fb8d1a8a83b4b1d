"""Baseline: self-training (Yarowsky 1995; sklearn's SelfTrainingClassifier) around logistic regression.

`params["method"]` picks the recipe:
  "supervised"     logistic regression on the labeled images only (what the unlabeled images must beat);
  "self_training"  SelfTrainingClassifier: repeatedly adds the unlabeled images whose predicted class
                   probability exceeds `threshold` as pseudo-labels and refits, for at most
                   `max_iter` rounds (the baseline).
`C` is the logistic regression's inverse regularisation strength.
Everything here may be changed, within the rules in the task description.
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.semi_supervised import SelfTrainingClassifier


def fit(x_labeled: np.ndarray, y_labeled: np.ndarray, x_unlabeled: np.ndarray, params: dict, device: str):
    """x_*: (n, 144) float32 pixels in [0, 1] (12x12 images, row by row); y_labeled: (n,) labels 0..9.
    Returns a fitted model."""
    method = params["method"]
    base = LogisticRegression(C=float(params["C"]), max_iter=2000)
    if method == "supervised":
        return base.fit(x_labeled, y_labeled)
    if method == "self_training":
        x = np.concatenate([x_labeled, x_unlabeled])
        y = np.concatenate([y_labeled, np.full(len(x_unlabeled), -1)])  # -1 marks unlabeled for sklearn
        return SelfTrainingClassifier(base, threshold=float(params["threshold"]),
                                      max_iter=int(params["max_iter"])).fit(x, y)
    raise ValueError(f"unknown method {method!r}; use supervised or self_training")


def predict(model, x: np.ndarray) -> np.ndarray:
    """One digit 0..9 per row; must not depend on the other rows."""
    return model.predict(x)
