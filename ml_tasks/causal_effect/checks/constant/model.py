"""A trivial predictor for `setup.py --check`: one constant effect for every unit, the naive difference
in mean outcomes between treated and control training units. No constant beats the floor (the oracle
constant) on the test units, and on the val units every constant scores worse than that floor too."""

import numpy as np


def estimate_ite(train, inputs, params):
    effect = train.loc[train.t == 1, "y"].mean() - train.loc[train.t == 0, "y"].mean()
    return np.full(len(inputs), effect)
