"""Reference solution: TRADES adversarial training (Zhang et al. 2019) of a ReLU MLP from the family.

Each batch minimises the clean cross-entropy plus `beta` times the KL divergence between the
network's prediction on the clean image and on an adversarial image. The adversarial image is
found by `steps` steps of L-inf projected gradient ascent on that KL divergence, inside a ball of
radius `train_eps` (ramped up over the first third of training), starting next to the clean image.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from family import RobustMLP


def kl_attack(net: RobustMLP, x: torch.Tensor, eps: float, steps: int) -> torch.Tensor:
    """The L-inf PGD example that most changes the prediction on x (no labels used)."""
    target = F.softmax(net(x), dim=1).detach()
    x_adv = (x + 0.001 * torch.randn_like(x)).clamp(0, 1)
    for _ in range(steps):
        x_adv.requires_grad_(True)
        divergence = F.kl_div(F.log_softmax(net(x_adv), dim=1), target, reduction="sum")
        (grad,) = torch.autograd.grad(divergence, x_adv)
        x_adv = x_adv.detach() + 2.5 * eps / steps * grad.sign()
        x_adv = torch.min(torch.max(x_adv, x - eps), x + eps).clamp(0, 1)
    return x_adv.detach()


def train_model(x: np.ndarray, y: np.ndarray, params: dict, device: str) -> RobustMLP:
    net = RobustMLP([int(params["width"])] * int(params["depth"])).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=float(params["lr"]))
    xs, ys = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
    batch, epochs, beta = int(params["batch_size"]), int(params["epochs"]), float(params["beta"])
    for epoch in range(epochs):
        eps = float(params["train_eps"]) * min(1.0, (epoch + 1) / max(1.0, epochs / 3))
        order = torch.randperm(len(xs), device=device)
        for start in range(0, len(xs), batch):
            idx = order[start:start + batch]
            xb, yb = xs[idx], ys[idx]
            x_adv = kl_attack(net, xb, eps, int(params["steps"]))
            logits = net(xb)
            robust = F.kl_div(F.log_softmax(net(x_adv), dim=1), F.softmax(logits, dim=1), reduction="batchmean")
            loss = F.cross_entropy(logits, yb) + beta * robust
            opt.zero_grad()
            loss.backward()
            opt.step()
    return net.eval().cpu()
