"""Reference solution used to measure the target (never shown to agents; the task folder is masked).

One-shot federated learning by sufficient statistics (analytic federated learning: the clients'
statistics add up to the pooled data's, so the result does not depend on how the data are split).
In its single round each client sends what linear discriminant analysis needs from its shard: the
count and the sum of its examples per class (classes with fewer than MIN_COUNT examples are left out
of the class sums, so no message reveals an individual example) and the shard's second-moment matrix
X^T X (10 + 640 + 4,096 = 4,746 numbers). The server pools them into class means and a shared
within-class covariance, shrinks that towards a multiple of the identity, and broadcasts the linear
classifier W = S^-1 mu_c, b_c = log prior_c - mu_c S^-1 mu_c / 2 (650 numbers).
"""

from __future__ import annotations

import numpy as np

CLASSES, PIXELS = 10, 64
MIN_COUNT = 5  # per-class sums over fewer examples are not sent
SHRINK = 0.1  # covariance shrinkage towards (trace / d) I


def init_model(params, device):
    return {"w": np.zeros((PIXELS, CLASSES), np.float32), "b": np.zeros(CLASSES, np.float32)}


def client_update(model, client_state, x, y, params, device):
    x = np.asarray(x, np.float64)
    counts = np.bincount(y, minlength=CLASSES).astype(np.float64)
    sums = np.stack([x[y == c].sum(0) for c in range(CLASSES)])
    small = counts < MIN_COUNT
    counts[small], sums[small] = 0.0, 0.0
    kept = np.isin(y, np.flatnonzero(~small))
    return {"counts": counts, "sums": sums, "gram": x[kept].T @ x[kept]}, None


def server_aggregate(model, updates, sizes, server_state, params, device):
    counts = sum(u["counts"] for u in updates)
    sums = sum(u["sums"] for u in updates)
    gram = sum(u["gram"] for u in updates)
    seen = counts > 0
    means = np.where(seen[:, None], sums / np.maximum(counts, 1)[:, None], 0.0)
    within = (gram - (means * counts[:, None]).T @ means) / max(counts.sum() - seen.sum(), 1.0)
    cov = (1 - SHRINK) * within + SHRINK * np.trace(within) / PIXELS * np.eye(PIXELS)
    w = np.linalg.solve(cov, means.T)  # (64, 10)
    prior = np.where(seen, counts / counts.sum(), 1.0)
    b = np.where(seen, np.log(prior) - 0.5 * np.einsum("cd,dc->c", means, w), -1e9)
    return {"w": w.astype(np.float32), "b": b.astype(np.float32)}, None


def predict(model, x, params, device):
    return np.asarray(x, np.float64) @ model["w"] + model["b"]
