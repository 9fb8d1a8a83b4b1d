"""Trivial predictor for `setup.py --check`: the majority observed label for every row."""

import numpy as np


def fit(x, y, env, params, device):
    return int(np.bincount(y, minlength=2).argmax())


def predict(label, x):
    return np.full(len(x), label)
