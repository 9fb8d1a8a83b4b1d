"""Baseline: PGD adversarial training (Madry et al. 2018) of a ReLU MLP, in plain torch.

Each batch's loss mixes the clean cross-entropy and the cross-entropy on L-inf PGD examples
(random start, `pgd_steps` signed-gradient steps of size 2.5 * train_eps / pgd_steps):
    loss = (1 - adv_weight) * CE(clean) + adv_weight * CE(adversarial)
Everything here may be changed; train_model must return a family.RobustMLP (the evaluator rebuilds
that architecture from the weights, so only the weights matter).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from family import RobustMLP


def pgd(net: nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float, steps: int) -> torch.Tensor:
    """L-inf PGD inside [0, 1] with a random start; returns detached adversarial inputs."""
    if steps <= 0 or eps <= 0:
        return x
    alpha = 2.5 * eps / steps
    delta = (torch.rand_like(x) * 2 - 1) * eps
    for _ in range(steps):
        delta.requires_grad_(True)
        loss = F.cross_entropy(net((x + delta).clamp(0, 1)), y)
        (grad,) = torch.autograd.grad(loss, delta)
        delta = (delta + alpha * grad.sign()).clamp(-eps, eps).detach()
    return (x + delta).clamp(0, 1).detach()


def train_model(x: np.ndarray, y: np.ndarray, params: dict, device: str) -> RobustMLP:
    """x: (n, 64) float32 pixels in [0, 1]; y: (n,) int labels 0..9. The driver has seeded torch."""
    net = RobustMLP([int(params["width"])] * int(params["depth"])).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=float(params["lr"]), weight_decay=float(params["weight_decay"]))
    xs, ys = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
    batch, epochs = int(params["batch_size"]), int(params["epochs"])
    eps, steps, w_adv = float(params["train_eps"]), int(params["pgd_steps"]), float(params["adv_weight"])
    for epoch in range(epochs):
        # ramp the training epsilon up over the first third of training (a common stabilizer)
        eps_now = eps * min(1.0, (epoch + 1) / max(1.0, epochs / 3))
        order = torch.randperm(len(xs), device=device)
        net.train()
        for start in range(0, len(xs), batch):
            idx = order[start:start + batch]
            xb, yb = xs[idx], ys[idx]
            loss = (1 - w_adv) * F.cross_entropy(net(xb), yb)
            if w_adv > 0:
                loss = loss + w_adv * F.cross_entropy(net(pgd(net, xb, yb, eps_now, steps)), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return net.eval().cpu()
