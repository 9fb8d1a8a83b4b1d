"""Trivial predictor for `setup.py --check`: the majority label for everyone (parity 0, accuracy ~0.68)."""

import numpy as np


def fit_predict(train, inputs, params):
    return np.full(len(inputs), int(train["y"].mean() >= 0.5))
