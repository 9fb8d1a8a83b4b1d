"""Trivial predictor for `setup.py --check`: a fairness-unaware logistic regression (pays for its parity gap: ~0.53-0.60)."""

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler


def fit_predict(train, inputs, params):
    features = [c for c in inputs.columns if c != "a"]
    scaler = StandardScaler().fit(train[features])
    model = LogisticRegression(max_iter=1000).fit(scaler.transform(train[features]), train["y"])
    return model.predict(scaler.transform(inputs[features]))
