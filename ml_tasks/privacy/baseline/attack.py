"""Membership inference: the file you improve.

The driver (harness-owned) calls

    attack(target, candidates_x, candidates_y, aux_x, aux_y, params, seed) -> scores

`target` holds the target model's weights (target_model.py: `target_model.logits(target, x)` gives its
logits); `candidates_x, candidates_y` are the images whose membership you score, with their true labels;
`aux_x, aux_y` are public images from the same distribution, none of them a candidate. Return one finite
score per candidate, higher = more likely a member of the target's training set.

This baseline is the loss-threshold attack (Yeom et al. 2018): members were fitted, so their loss is low.
`params["score"]` picks the statistic of the target's output on each candidate:
  loss              -cross-entropy of the true label
  confidence        the largest predicted probability
  entropy           -entropy of the predicted distribution
  modified_entropy  -modified entropy (Song & Mittal 2021), which uses the true label
  margin            true-label logit minus the largest other logit
"""

from __future__ import annotations

import numpy as np

import target_model

DEFAULTS = {"score": "loss"}


def statistic(logits: np.ndarray, y: np.ndarray, kind: str) -> np.ndarray:
    rows = np.arange(len(y))
    log_p = target_model.log_softmax(logits)
    p = np.exp(log_p)
    if kind == "loss":
        return log_p[rows, y]
    if kind == "confidence":
        return p.max(axis=1)
    if kind == "entropy":
        return (p * log_p).sum(axis=1)
    if kind == "modified_entropy":
        p_true = p[rows, y]
        others = p.copy()
        others[rows, y] = 0.0
        return (1 - p_true) * log_p[rows, y] + (others * np.log1p(-np.minimum(others, 1 - 1e-12))).sum(axis=1)
    if kind == "margin":
        other = logits.copy()
        other[rows, y] = -np.inf
        return logits[rows, y] - other.max(axis=1)
    raise ValueError(f"params.json: score must be one of loss, confidence, entropy, modified_entropy, margin; got {kind!r}")


def attack(target: dict, candidates_x: np.ndarray, candidates_y: np.ndarray, aux_x: np.ndarray, aux_y: np.ndarray,
           params: dict, seed: int) -> np.ndarray:
    p = {**DEFAULTS, **params}
    return statistic(target_model.logits(target, candidates_x), candidates_y, p["score"])
