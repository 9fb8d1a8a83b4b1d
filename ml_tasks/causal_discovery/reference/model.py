"""The target's reference solution (task.yaml's rationale; not shown to agents): diagnose each dataset's
noise, then run the algorithm whose assumptions it meets.

Regress every variable on all the others by least squares. In a linear SEM with Gaussian noise those
residuals are Gaussian; with non-Gaussian noise (exponential, Gumbel) they are skewed, and then the
model is identifiable from the data alone: DirectLiNGAM recovers the full DAG. Otherwise (Gaussian
noise, or nonlinear SEMs with Gaussian noise) only the Markov equivalence class is identifiable from
independences, and GES (BIC score) returns its CPDAG.

    python benchmarks/task_baseline.py causal_discovery --seeds 0 --overlay ml_tasks/causal_discovery/reference
"""

from __future__ import annotations

import logging

import numpy as np
from scipy import stats

logging.disable(logging.INFO)  # gcastle logs every fit at INFO level

# Median |skewness| of the residuals above which the noise is taken as non-Gaussian. The sample skewness
# of 1000 Gaussian draws has sd about 0.08, so 0.3 is far outside what Gaussian noise produces.
SKEW_THRESHOLD = 0.3


def residual_skewness(x: np.ndarray) -> float:
    """Median over variables of |skewness| of the residual of a least-squares fit on all other variables."""
    skews = []
    for j in range(x.shape[1]):
        others = np.column_stack([np.ones(len(x)), np.delete(x, j, axis=1)])
        coef, *_ = np.linalg.lstsq(others, x[:, j], rcond=None)
        skews.append(abs(stats.skew(x[:, j] - others @ coef)))
    return float(np.median(skews))


def discover(x: np.ndarray, params: dict) -> np.ndarray:
    from castle.algorithms import GES, DirectLiNGAM

    learner = DirectLiNGAM() if residual_skewness(x) > SKEW_THRESHOLD else GES(criterion="bic", method="scatter")
    learner.learn(x)
    graph = (np.asarray(learner.causal_matrix) != 0).astype(int)
    np.fill_diagonal(graph, 0)
    return graph
