"""Trivial predictor for `setup.py --check`: the majority label for everyone (equal rates, the floor: ~0.678)."""

import numpy as np


def fit_predict(train, inputs, params):
    return np.full(len(inputs), int(train["y"].mean() >= 0.5))
