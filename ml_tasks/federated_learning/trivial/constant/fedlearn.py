"""Trivial predictor for the floor check: no learning; every client reports its most common class and
the global model predicts the class reported most often."""

import numpy as np


def init_model(params, device):
    return {"votes": np.zeros(10)}


def client_update(model, client_state, x, y, params, device):
    votes = np.zeros(10)
    votes[np.bincount(y, minlength=10).argmax()] = 1.0
    return {"votes": votes}, None


def server_aggregate(model, updates, sizes, server_state, params, device):
    return {"votes": model["votes"] + sum(u["votes"] for u in updates)}, None


def predict(model, x, params, device):
    return np.full(len(x), int(np.argmax(model["votes"])))
