"""Harness-owned: the target model's architecture and one documented training recipe of its kind.

Every target has this architecture, but was trained by a recipe of its own, drawn per world and secret
(how long, how fast, batch size, weight penalty, perturbations of the training images). `train` is a
recipe of the same kind that no target used; agent code may call it, e.g. to fit shadow models.
The weights are plain float32 arrays: w1 (100, 128), b1 (128,), w2 (128, 10), b2 (10,);
`logits(weights, x)` computes relu(x w1 + b1) w2 + b2.
"""

from __future__ import annotations

import warnings

import numpy as np

N_FEATURES, HIDDEN, N_CLASSES = 100, 128, 10
SHAPES = {"w1": (N_FEATURES, HIDDEN), "b1": (HIDDEN,), "w2": (HIDDEN, N_CLASSES), "b2": (N_CLASSES,)}
# scikit-learn's MLPClassifier: one ReLU hidden layer of 128, Adam (lr 1e-3, batch 200), L2 penalty
# 1e-4, exactly 200 epochs (no early stop): it fits its 300 training images perfectly.
RECIPE = {"hidden_layer_sizes": (HIDDEN,), "alpha": 1e-4, "max_iter": 200, "tol": 1e-6, "n_iter_no_change": 200}


def train(x: np.ndarray, y: np.ndarray, random_state: int) -> dict[str, np.ndarray]:
    """Fit the documented recipe on (x, y); `random_state` seeds the initialization and the batch order."""
    from sklearn.neural_network import MLPClassifier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter reached: intended, the recipe trains a fixed 200 epochs
        model = MLPClassifier(**RECIPE, random_state=random_state).fit(np.asarray(x, np.float64), y)
    if len(model.classes_) != N_CLASSES:
        raise ValueError(f"train needs all {N_CLASSES} classes among its labels, got {len(model.classes_)}")
    (w1, w2), (b1, b2) = model.coefs_, model.intercepts_
    return {k: v.astype(np.float32) for k, v in {"w1": w1, "b1": b1, "w2": w2, "b2": b2}.items()}


def logits(weights: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The model's logits (n, 10), in float64."""
    w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    hidden = np.maximum(np.asarray(x, np.float64) @ w["w1"] + w["b1"], 0.0)
    return hidden @ w["w2"] + w["b2"]


def log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))
