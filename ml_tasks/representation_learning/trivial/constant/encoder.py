"""Trivial representation for the floor check: every image gets the same embedding."""

import numpy as np


def pretrain(x_unlabeled, params, device):
    return None


def embed(encoder, x, params, device):
    return np.ones((len(x), 1))
