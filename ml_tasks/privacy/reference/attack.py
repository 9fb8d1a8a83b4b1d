"""Reference attack that sets the reference score (never shown to agents; the task folder is masked).

Online LiRA (Carlini et al. 2022, "Membership Inference Attacks From First Principles") with stand-ins for
what the attacker does not know: a candidate's loss says little on its own, since some images are easy
(low loss whether or not they were trained on) and some hard, so the attack calibrates per example.
1. Shadow models are trained with the documented recipe (target_model.train; the targets' own recipes
   are secret) on random halves of the candidates, in complementary pairs, so every candidate is IN for
   half of the shadows and OUT for the other half; each shadow also trains on a random part of the public
   auxiliary pool, standing in for the target's undisclosed private training images.
2. Per candidate, the shadows' logit-scaled confidences phi = log(p_y / (1 - p_y)) of its true label are
   fitted with one Gaussian over its IN shadows and one over its OUT shadows: per-candidate means, one
   variance each shared by all candidates (the median), which few shadows estimate more stably.
3. The score is the log-likelihood ratio of the target's phi under the two.
"""

from __future__ import annotations

import numpy as np

import target_model

DEFAULTS = {"pairs": 20, "aux_share": 0.4, "min_var": 1e-6}


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
    n_aux = int(round(float(p["aux_share"]) * len(aux_y)))
    masks, phis = [], []
    for _ in range(int(p["pairs"])):
        half = rng.random(len(candidates_y)) < 0.5
        for inside in (half, ~half):
            extra = rng.choice(len(aux_y), n_aux, replace=False)
            x = np.concatenate([candidates_x[inside], aux_x[extra]])
            y = np.concatenate([candidates_y[inside], aux_y[extra]])
            weights = target_model.train(x, y, random_state=int(rng.integers(2**31)))
            masks.append(inside)
            phis.append(logit_confidence(target_model.logits(weights, candidates_x), candidates_y))
    masks, phis = np.array(masks), np.array(phis)
    mean_in = np.where(masks, phis, 0).sum(axis=0) / masks.sum(axis=0)
    mean_out = np.where(~masks, phis, 0).sum(axis=0) / (~masks).sum(axis=0)
    # one variance each, the median over the candidates of their own IN (OUT) shadows' spread
    var_in = np.median(np.where(masks, (phis - mean_in) ** 2, np.nan).mean(axis=0, where=masks))
    var_out = np.median(np.where(~masks, (phis - mean_out) ** 2, np.nan).mean(axis=0, where=~masks))
    var_in, var_out = max(float(var_in), p["min_var"]), max(float(var_out), p["min_var"])
    phi = logit_confidence(target_model.logits(target, candidates_x), candidates_y)
    return (-0.5 * (phi - mean_in) ** 2 / var_in - 0.5 * np.log(var_in)
            + 0.5 * (phi - mean_out) ** 2 / var_out + 0.5 * np.log(var_out))
