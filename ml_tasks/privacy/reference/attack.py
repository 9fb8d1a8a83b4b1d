"""Reference attack that sets the target (never shown to agents; the task folder is masked).

Offline LiRA (Carlini et al. 2022, "Membership Inference Attacks From First Principles"): a candidate's
loss says little on its own, since some images are easy (low loss whether or not they were trained on)
and some hard. The attack calibrates per example:
1. shadow models are trained with the target's own recipe (target_model.train) on random halves of the
   public auxiliary pool, the same size as the target's training set; no candidate is in any of them, so
   each shadow shows how the candidate looks to a model that did NOT train on it;
2. per candidate, the shadows' logit-scaled confidences phi = log(p_y / (1 - p_y)) of its true label are
   fitted with a Gaussian (mean, standard deviation over the shadows);
3. the score is how far the target's phi lies above that non-member distribution, in standard deviations
   (a one-sided likelihood test: the larger, the less likely a non-member produced it).
"""

from __future__ import annotations

import numpy as np

import target_model

DEFAULTS = {"shadows": 32, "train_size": 300, "min_std": 1e-3}


def logit_confidence(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    """log(p_y / (1 - p_y)), stable for confident models: the true logit minus the log-sum-exp of the others."""
    rows = np.arange(len(y))
    others = logits.copy()
    others[rows, y] = -np.inf
    top = others.max(axis=1, keepdims=True)
    return logits[rows, y] - (top[:, 0] + np.log(np.exp(others - top).sum(axis=1)))


def attack(target: dict, candidates_x: np.ndarray, candidates_y: np.ndarray, aux_x: np.ndarray, aux_y: np.ndarray,
           params: dict, seed: int) -> np.ndarray:
    p = {**DEFAULTS, **params}
    rng = np.random.default_rng(seed)
    shadow_phi = []
    for _ in range(int(p["shadows"])):
        subset = rng.choice(len(aux_y), size=int(p["train_size"]), replace=False)
        weights = target_model.train(aux_x[subset], aux_y[subset], random_state=int(rng.integers(2**31)))
        shadow_phi.append(logit_confidence(target_model.logits(weights, candidates_x), candidates_y))
    shadow_phi = np.array(shadow_phi)
    mean, std = shadow_phi.mean(axis=0), np.maximum(shadow_phi.std(axis=0), float(p["min_std"]))
    return (logit_confidence(target_model.logits(target, candidates_x), candidates_y) - mean) / std
