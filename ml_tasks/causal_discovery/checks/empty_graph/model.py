"""Trivial predictor for `setup.py --check`: the empty graph, whose SHD is the number of true edges."""

import numpy as np


def discover(x, params):
    return np.zeros((x.shape[1], x.shape[1]), dtype=int)
