"""Individual treatment effect (ITE) estimation for the IHDP task: the file you improve.

The driver calls `estimate_ite` once per replication with that replication's training units and the
units to predict, and expects one effect estimate E[Y(1) - Y(0) | x] per input row, in input order.
Hyper-parameters come from params.json (also editable).

This baseline is an S-learner: one LightGBM regression of the outcome on the covariates and the
treatment indicator, whose effect estimate is the difference of its predictions with t set to 1 and to 0.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
from lightgbm import LGBMRegressor

SEED = 0
LGBM_KEYS = ("n_estimators", "learning_rate", "num_leaves", "min_child_samples", "subsample",
             "colsample_bytree", "reg_lambda", "linear_tree")
DEFAULTS = {"n_estimators": 100, "learning_rate": 0.1, "num_leaves": 31, "min_child_samples": 20,
            "subsample": 1.0, "colsample_bytree": 1.0, "reg_lambda": 0.0, "linear_tree": False}


def n_threads() -> int:
    """The sandbox sets OMP_NUM_THREADS to the task's CPU share; use exactly that many threads."""
    try:
        return max(1, int(os.environ.get("OMP_NUM_THREADS", "1")))
    except ValueError:
        return 1


def make_lgbm(params: dict) -> LGBMRegressor:
    kwargs = {k: params[k] for k in LGBM_KEYS}
    if kwargs["subsample"] < 1.0:
        kwargs["subsample_freq"] = 1  # LightGBM ignores subsample unless bagging is switched on
    return LGBMRegressor(**kwargs, random_state=SEED, n_jobs=n_threads(), deterministic=True,
                         force_row_wise=True, verbose=-1)


def estimate_ite(train: pd.DataFrame, inputs: pd.DataFrame, params: dict) -> np.ndarray:
    """Fit on `train` (covariates, t, y) and return the estimated effect for every row of `inputs`."""
    params = {**DEFAULTS, **params}
    covariates = list(inputs.columns)
    x_train = train[covariates].to_numpy(dtype=float)
    t_train = train["t"].to_numpy(dtype=float)
    y_train = train["y"].to_numpy(dtype=float)
    x_eval = inputs[covariates].to_numpy(dtype=float)

    model = make_lgbm(params).fit(np.column_stack([x_train, t_train]), y_train)
    treated = model.predict(np.column_stack([x_eval, np.ones(len(x_eval))]))
    control = model.predict(np.column_stack([x_eval, np.zeros(len(x_eval))]))
    return treated - control
