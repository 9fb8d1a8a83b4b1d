"""Trivial predictor for `setup.py --check`: the most frequent labeled class for every image."""

import numpy as np


def fit(x_labeled, y_labeled, x_unlabeled, params, device):
    return int(np.bincount(y_labeled, minlength=10).argmax())


def predict(label, x):
    return np.full(len(x), label)
