"""The target's reference solution (task.yaml's rationale; not shown to agents): the well-specified model
of Hill's (2011) response surface B, fit on the training units by nonlinear least squares.

Surface B: y0 = exp(b0 + (x + 0.5) . beta) + noise, y1 = c + x . beta + noise, with one coefficient vector
beta shared by both arms. The effect is y1 - y0 at the fitted parameters.

    python benchmarks/task_baseline.py causality --seeds 0 --overlay ml_tasks/causality/reference
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

OFFSET = 0.5  # surface B shifts every covariate by 0.5 inside the exponential


def surfaces(theta: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(y0, y1) at parameters theta = (b0, c, beta...)."""
    b0, c, beta = theta[0], theta[1], theta[2:]
    return np.exp(b0 + (x + OFFSET) @ beta), c + x @ beta


def initial_guess(x: np.ndarray, t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """beta from a ridge fit on the treated arm (linear there); b0 from the controls' mean log-outcome."""
    treated = np.column_stack([np.ones(int(t.sum())), x[t == 1]])
    coef = np.linalg.solve(treated.T @ treated + 1e-3 * np.eye(treated.shape[1]), treated.T @ y[t == 1])
    beta = coef[1:]
    log_y0 = np.log(np.clip(y[t == 0], 0.1, None))
    b0 = float(np.mean(log_y0 - (x[t == 0] + OFFSET) @ beta))
    return np.concatenate([[b0, coef[0]], beta])


def estimate_ite(train: pd.DataFrame, inputs: pd.DataFrame, params: dict) -> np.ndarray:
    covariates = list(inputs.columns)
    x, x_eval = train[covariates].to_numpy(dtype=float), inputs[covariates].to_numpy(dtype=float)
    t, y = train["t"].to_numpy(dtype=int), train["y"].to_numpy(dtype=float)

    def residuals(theta: np.ndarray) -> np.ndarray:
        y0, y1 = surfaces(np.clip(theta, -20, 20), x)
        return np.where(t == 1, y1, y0) - y

    fit = least_squares(residuals, initial_guess(x, t, y), method="trf", loss="linear", max_nfev=2000)
    y0, y1 = surfaces(fit.x, x_eval)
    return y1 - y0
