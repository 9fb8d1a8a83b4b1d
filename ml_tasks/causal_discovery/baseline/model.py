"""Causal structure learning: the file you improve.

The driver calls `discover(x, params)` once per dataset with an (n_samples, n_variables) array of
standardized observations and expects a (n_variables, n_variables) 0/1 adjacency matrix: entry
[i, j] = 1 means the edge x_i -> x_j. Setting both [i, j] and [j, i] marks an undirected edge (you
know the two are adjacent but not the direction); it scores better than a wrong direction and worse
than the right one. Hyper-parameters come from params.json (also editable).

This baseline is gcastle's PC algorithm (Fisher-z conditional-independence tests), whose output is a
CPDAG: edges it cannot orient stay undirected.
"""

from __future__ import annotations

import logging

import numpy as np

logging.disable(logging.INFO)  # gcastle logs every fit at INFO level

DEFAULTS = {"algorithm": "pc", "alpha": 0.05, "ci_test": "fisherz", "variant": "original"}


def _learner(params: dict):
    from castle.algorithms import GES, PC, DirectLiNGAM, ICALiNGAM

    name = params["algorithm"]
    if name == "pc":
        return PC(variant=params["variant"], alpha=params["alpha"], ci_test=params["ci_test"])
    if name == "ges":
        return GES(criterion="bic", method="scatter")
    if name == "directlingam":
        return DirectLiNGAM()
    if name == "icalingam":
        return ICALiNGAM(random_state=0)
    raise ValueError(f"params.json: algorithm must be pc, ges, directlingam or icalingam, got {name!r}")


def discover(x: np.ndarray, params: dict) -> np.ndarray:
    """Learn a graph over the columns of x; return its 0/1 adjacency matrix."""
    params = {**DEFAULTS, **params}
    learner = _learner(params)
    learner.learn(x)
    graph = (np.asarray(learner.causal_matrix) != 0).astype(int)
    np.fill_diagonal(graph, 0)
    return graph
