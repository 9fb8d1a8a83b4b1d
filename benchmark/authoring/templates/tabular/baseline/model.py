"""The editable model of the __TASK_NAME__ task: the agent may change anything in this file.

`fit_predict(train_x, train_y, inputs_x, params, seed)` trains on the public training rows and returns one
integer class label per row of `inputs_x`, in order. The baseline: standardized features and a
logistic regression (scikit-learn), its settings from params.json.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


def fit_predict(train_x: pd.DataFrame, train_y: np.ndarray, inputs_x: pd.DataFrame, params: dict,
                seed: int) -> np.ndarray:
    model = make_pipeline(StandardScaler(), LogisticRegression(C=float(params.get("C", 1.0)),
                                                               max_iter=int(params.get("max_iter", 1000)),
                                                               random_state=seed))
    model.fit(train_x, train_y)
    return model.predict(inputs_x)
