"""The target's reference solution (task.yaml's rationale; not shown to agents): the average of a small
linear-tree LightGBM X-learner and a lasso over a dictionary of the documented family's terms.

    python benchmarks/task_baseline.py causal_effect --seeds 0 --overlay ml_tasks/causal_effect/reference
"""

from __future__ import annotations

import logging
import os
import warnings

import numpy as np
import pandas as pd
from causalml.inference.meta import BaseXRegressor
from lightgbm import LGBMRegressor
from sklearn.linear_model import LassoCV, LogisticRegression
from sklearn.preprocessing import SplineTransformer

logging.getLogger("causalml").setLevel(logging.WARNING)
warnings.filterwarnings("ignore")
N_CONTINUOUS = 12  # x0..x11; x12..x19 are binary
LGBM = {"learning_rate": 0.015, "num_leaves": 4, "n_estimators": 600, "min_child_samples": 10, "subsample": 0.8,
        "subsample_freq": 1, "colsample_bytree": 0.8, "reg_lambda": 1.0, "linear_tree": True}


def x_learner(x: np.ndarray, t: np.ndarray, y: np.ndarray, x_eval: np.ndarray, seed: int) -> np.ndarray:
    """The baseline's X-learner with small linear-tree LightGBM models (the best val of 11 variants)."""
    threads = max(1, int(os.environ.get("OMP_NUM_THREADS", "1") or 1))
    base = LGBMRegressor(**LGBM, random_state=seed, n_jobs=threads, deterministic=True, force_row_wise=True,
                         verbose=-1)
    prop = LogisticRegression(C=1.0, max_iter=2000).fit(x, t)
    clip = lambda p: np.clip(p, 0.05, 0.95)  # noqa: E731
    learner = BaseXRegressor(learner=base)
    learner.fit(x, treatment=t, y=y, p=clip(prop.predict_proba(x)[:, 1]))
    effects = learner.predict(x_eval, p=clip(prop.predict_proba(x_eval)[:, 1]), verbose=False)
    return np.asarray(effects, dtype=float).reshape(len(x_eval), -1)[:, 0]


def family_basis(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Covariates, pairwise products, steps at 7 quantiles and a cubic spline of each continuous covariate."""
    d = x.shape[1]
    cont = ref[:, :N_CONTINUOUS]
    qs = np.quantile(cont, [0.15, 0.25, 0.35, 0.5, 0.65, 0.75, 0.85], axis=0)
    spline = SplineTransformer(n_knots=5, degree=3).fit(cont)
    return np.column_stack([
        x,
        np.column_stack([x[:, j] * x[:, k] for j in range(d) for k in range(j + 1, d)]),
        np.column_stack([(x[:, j] > q).astype(float) for j in range(N_CONTINUOUS) for q in qs[:, j]]),
        spline.transform(x[:, :N_CONTINUOUS]),
    ])


def dictionary_lasso(x: np.ndarray, t: np.ndarray, y: np.ndarray, x_eval: np.ndarray) -> np.ndarray:
    """y ~ B(x) + t * B(x) + t by cross-validated lasso; the effect is the t-part of the fit."""
    bx, be = family_basis(x, x), family_basis(x_eval, x)
    mu, sd = bx.mean(0), bx.std(0) + 1e-9
    bx, be = (bx - mu) / sd, (be - mu) / sd
    design = np.column_stack([bx, t[:, None] * bx, t])
    fit = LassoCV(cv=3, alphas=15, max_iter=1000, tol=1e-3, random_state=0).fit(design, y)
    k = bx.shape[1]
    return be @ fit.coef_[k:2 * k] + fit.coef_[-1]


def estimate_ite(train: pd.DataFrame, inputs: pd.DataFrame, params: dict) -> np.ndarray:
    covariates = list(inputs.columns)
    x, x_eval = train[covariates].to_numpy(dtype=float), inputs[covariates].to_numpy(dtype=float)
    t, y = train["t"].to_numpy(dtype=int), train["y"].to_numpy(dtype=float)
    lasso = dictionary_lasso(x, t.astype(float), y, x_eval)
    return 0.5 * (lasso + x_learner(x, t, y, x_eval, int(params.get("seed", 0))))
