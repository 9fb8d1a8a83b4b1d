"""Baseline: empirical risk minimization (ERM) of a small torch MLP over the pooled training environments.

`params["algorithm"]` selects the objective, all in this file:
  "erm"   mean cross-entropy over all training rows (the baseline);
  "irm"   IRMv1 (Arjovsky et al., 2019): per-environment risk plus `penalty_weight` times the squared
          gradient of that risk w.r.t. a dummy classifier scale, switched on after `anneal_epochs`;
  "vrex"  V-REx (Krueger et al., 2021): mean risk plus `penalty_weight` times the variance of the
          per-environment risks, switched on after `anneal_epochs`.
Everything here may be changed, within the rules in the task description.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


def _penalty(algorithm: str, logits: list[torch.Tensor], targets: list[torch.Tensor]) -> torch.Tensor:
    device = logits[0].device  # every tensor of a step on the model's device (a GPU when one is visible)
    if algorithm == "irm":
        total = torch.zeros((), device=device)
        for lg, yb in zip(logits, targets):
            scale = torch.ones((), device=device, requires_grad=True)
            risk = F.binary_cross_entropy_with_logits(lg * scale, yb)
            (grad,) = torch.autograd.grad(risk, scale, create_graph=True)
            total = total + grad.pow(2)
        return total
    if algorithm == "vrex":
        risks = torch.stack([F.binary_cross_entropy_with_logits(lg, yb) for lg, yb in zip(logits, targets)])
        return risks.var(unbiased=False)
    return torch.zeros((), device=device)


def fit(x: np.ndarray, y: np.ndarray, env: np.ndarray, params: dict, device: str) -> nn.Module:
    """x: (n, 200) float32 in [0, 1]; y: (n,) observed 0/1 labels; env: (n,) training environment 0/1.
    The data go to `device` once and every step is one full batch there (no per-row Python work)."""
    algorithm = params["algorithm"]
    if algorithm not in ("erm", "irm", "vrex"):
        raise ValueError(f"unknown algorithm {algorithm!r}; use erm, irm or vrex")
    width = int(params["width"])
    net = nn.Sequential(nn.Linear(x.shape[1], width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                        nn.Linear(width, 1)).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=float(params["lr"]), weight_decay=float(params["weight_decay"]))
    envs = [(torch.from_numpy(x[env == e]).to(device), torch.from_numpy(y[env == e].astype(np.float32)).to(device))
            for e in np.unique(env)]
    for epoch in range(int(params["epochs"])):
        # full-batch steps: every step sees every environment, as IRM and V-REx need
        logits = [net(xe).squeeze(1) for xe, _ in envs]
        targets = [ye for _, ye in envs]
        risk = torch.stack([F.binary_cross_entropy_with_logits(lg, yb) for lg, yb in zip(logits, targets)]).mean()
        weight = float(params["penalty_weight"]) if epoch >= int(params["anneal_epochs"]) else 1.0
        loss = risk + weight * _penalty(algorithm, logits, targets)
        if weight > 1.0:
            loss = loss / weight  # keep the gradient scale comparable once the penalty dominates
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net.eval()


def predict(net: nn.Module, x: np.ndarray) -> np.ndarray:
    """One 0/1 prediction of the digit's group per row; must not depend on the other rows."""
    device = next(net.parameters()).device
    with torch.no_grad():
        return (net(torch.from_numpy(x).to(device)).squeeze(1) > 0).long().cpu().numpy()
