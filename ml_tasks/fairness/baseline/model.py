"""A fair classifier: the file you improve.

The driver calls `fit_predict(train, inputs, params)` once. `train` holds the features, the sensitive
attribute `a` and the label `y` (index: id); `inputs` holds the features and `a` of the rows to
predict. Return one hard label (0 or 1) per row of `inputs`, in order. Hyper-parameters come from
params.json (also editable); `params["seed"]` is the run's seed.

This baseline is fairlearn's ExponentiatedGradient reduction (Agarwal et al. 2018) around a
standardized logistic regression, under a demographic-parity constraint with slack `eps`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from fairlearn.reductions import DemographicParity, EqualizedOdds, ExponentiatedGradient
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.compose import ColumnTransformer

DEFAULTS = {"eps": 0.05, "C": 1.0, "constraint": "demographic_parity", "max_iter": 50, "use_a": False}
CATEGORICAL = ["occupation", "occupation_husb"]


def _features(frame: pd.DataFrame, use_a: bool) -> pd.DataFrame:
    drop = ["y"] + ([] if use_a else ["a"])
    return frame.drop(columns=[c for c in drop if c in frame.columns])


def fit_predict(train: pd.DataFrame, inputs: pd.DataFrame, params: dict) -> np.ndarray:
    params = {**DEFAULTS, **params}
    x_train, x_eval = _features(train, params["use_a"]), _features(inputs, params["use_a"])
    numeric = [c for c in x_train.columns if c not in CATEGORICAL]
    encode = ColumnTransformer([("num", StandardScaler(), numeric),
                                ("cat", OneHotEncoder(handle_unknown="ignore"), CATEGORICAL)]).fit(x_train)
    x_train, x_eval = encode.transform(x_train), encode.transform(x_eval)
    estimator = LogisticRegression(C=params["C"], max_iter=1000)
    constraint = (DemographicParity if params["constraint"] == "demographic_parity" else EqualizedOdds)(
        difference_bound=params["eps"])
    mitigator = ExponentiatedGradient(estimator, constraint, max_iter=int(params["max_iter"]))
    mitigator.fit(x_train, train["y"].to_numpy(), sensitive_features=train["a"].to_numpy())
    return mitigator.predict(x_eval, random_state=params["seed"])
