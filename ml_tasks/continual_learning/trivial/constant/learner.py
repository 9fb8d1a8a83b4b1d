"""Trivial predictor for the floor check: no learning, always the most recent split's first class."""

import numpy as np


def train_split(state, x, y, classes, split, params, device):
    return {"last": np.array([classes[0]])}


def predict(state, x, params, device):
    return np.full(len(x), int(state["last"][0]))
