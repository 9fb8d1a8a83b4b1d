"""Individual treatment effect (ITE) estimation for the causal_effect task: the file you improve.

The driver calls `estimate_ite` once per replication with that replication's training units and the
units to predict, and expects one effect estimate E[Y(1) - Y(0) | x] per input row, in input order.
Hyper-parameters come from params.json (also editable); the driver adds `seed` (the run's seed plus the
replication) for model code's own random generators. This baseline is a causalml meta-learner
(S/T/X/DR) with LightGBM base models and a logistic-regression propensity score.
"""

from __future__ import annotations

import logging
import os
import warnings

import numpy as np
import pandas as pd
from causalml.inference.meta import BaseDRRegressor, BaseSRegressor, BaseTRegressor, BaseXRegressor
from lightgbm import LGBMRegressor
from sklearn.linear_model import LogisticRegression

logging.getLogger("causalml").setLevel(logging.WARNING)
warnings.filterwarnings("ignore", category=UserWarning)

LEARNERS = {"s": BaseSRegressor, "t": BaseTRegressor, "x": BaseXRegressor, "dr": BaseDRRegressor}
LGBM_KEYS = ("n_estimators", "learning_rate", "num_leaves", "min_child_samples", "subsample",
             "colsample_bytree", "reg_lambda", "linear_tree")
DEFAULTS = {"seed": 0, "learner": "x", "n_estimators": 100, "learning_rate": 0.1, "num_leaves": 31, "min_child_samples": 20,
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
    return LGBMRegressor(**kwargs, random_state=int(params["seed"]), n_jobs=n_threads(), deterministic=True,
                         force_row_wise=True, verbose=-1)


def propensity(x_train: np.ndarray, t_train: np.ndarray, x_eval: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(t=1 | x) on the training and evaluation units, clipped away from 0 and 1 for stable weights."""
    model = LogisticRegression(C=1.0, max_iter=2000).fit(x_train, t_train)
    clip = lambda p: np.clip(p, 0.05, 0.95)  # noqa: E731
    return clip(model.predict_proba(x_train)[:, 1]), clip(model.predict_proba(x_eval)[:, 1])


def estimate_ite(train: pd.DataFrame, inputs: pd.DataFrame, params: dict) -> np.ndarray:
    """Fit on `train` (covariates, t, y) and return the estimated effect for every row of `inputs`."""
    params = {**DEFAULTS, **params}
    name = params["learner"]
    if name not in LEARNERS:
        raise ValueError(f"params.json: learner must be one of {sorted(LEARNERS)}, got {name!r}")
    covariates = list(inputs.columns)
    x_train = train[covariates].to_numpy(dtype=float)
    t_train = train["t"].to_numpy(dtype=int)
    y_train = train["y"].to_numpy(dtype=float)
    x_eval = inputs[covariates].to_numpy(dtype=float)

    learner = LEARNERS[name](learner=make_lgbm(params))
    if name in ("x", "dr"):
        p_train, p_eval = propensity(x_train, t_train, x_eval)
        fit_kwargs = {"seed": int(params["seed"])} if name == "dr" else {}
        learner.fit(x_train, treatment=t_train, y=y_train, p=p_train, **fit_kwargs)
        effects = learner.predict(x_eval, p=p_eval, verbose=False)
    else:
        learner.fit(x_train, treatment=t_train, y=y_train)
        effects = learner.predict(x_eval, verbose=False)
    return np.asarray(effects, dtype=float).reshape(len(inputs), -1)[:, 0]
