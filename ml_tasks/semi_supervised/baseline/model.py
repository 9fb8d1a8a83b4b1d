"""Baseline: self-training (Yarowsky 1995; sklearn's SelfTrainingClassifier) around logistic regression.

`params["method"]` picks one of sklearn's semi-supervised recipes, all in this file:
  "supervised"       logistic regression on the labeled images only (the no-unlabeled-data reference);
  "self_training"    SelfTrainingClassifier: repeatedly adds unlabeled images whose predicted class
                     probability exceeds `threshold` as pseudo-labels (the baseline);
  "label_spreading"  LabelSpreading with an RBF kernel (`gamma`) over labeled + unlabeled images.
Everything here may be changed, within the rules in the task description.
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.semi_supervised import LabelSpreading, SelfTrainingClassifier


def fit(x_labeled: np.ndarray, y_labeled: np.ndarray, x_unlabeled: np.ndarray, params: dict, device: str):
    """x_*: (n, 64) float32 pixels in [0, 1]; y_labeled: (n,) labels 0..9. Returns a fitted model."""
    method = params["method"]
    base = LogisticRegression(C=float(params["C"]), max_iter=2000)
    if method == "supervised":
        return base.fit(x_labeled, y_labeled)
    x = np.concatenate([x_labeled, x_unlabeled])
    y = np.concatenate([y_labeled, np.full(len(x_unlabeled), -1)])  # -1 marks unlabeled for sklearn
    if method == "self_training":
        return SelfTrainingClassifier(base, threshold=float(params["threshold"])).fit(x, y)
    if method == "label_spreading":
        return LabelSpreading(kernel="rbf", gamma=float(params["gamma"]), alpha=float(params["alpha"]),
                              max_iter=200).fit(x, y)
    raise ValueError(f"unknown method {method!r}; use supervised, self_training or label_spreading")


def predict(model, x: np.ndarray) -> np.ndarray:
    """One digit 0..9 per row; must not depend on the other rows."""
    return model.predict(x)
