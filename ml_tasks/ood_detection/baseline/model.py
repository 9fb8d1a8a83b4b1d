"""Baseline: maximum softmax probability (Hendrycks & Gimpel, 2017) of a small torch MLP classifier.

fit() trains a ReLU MLP on the in-distribution glyphs (classes 0-4); score() returns an OOD score, higher = more
likely out of distribution: 1 - the largest softmax probability.
Everything here may be changed, within the rules in the task description.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

N_CLASSES = 5


def fit(x: np.ndarray, y: np.ndarray, params: dict, device: str) -> dict:
    """x: (n, 64) float32 pixels (levels / 16); y: (n,) labels 0..4. The driver has seeded torch."""
    width, depth = int(params["width"]), int(params["depth"])
    layers: list[nn.Module] = []
    dims = [64] + [width] * depth
    for a, b in zip(dims, dims[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    net = nn.Sequential(*layers, nn.Linear(dims[-1], N_CLASSES)).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=float(params["lr"]), weight_decay=float(params["weight_decay"]))
    xs, ys = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
    batch = int(params["batch_size"])
    for _ in range(int(params["epochs"])):
        order = torch.randperm(len(xs), device=device)
        for start in range(0, len(xs), batch):
            idx = order[start:start + batch]
            loss = F.cross_entropy(net(xs[idx]), ys[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return {"net": net.eval(), "device": device}


def score(detector: dict, x: np.ndarray) -> np.ndarray:
    """One OOD score per image (higher = more likely OOD); must not depend on the other images."""
    with torch.no_grad():
        logits = detector["net"](torch.from_numpy(x).to(detector["device"])).cpu().double()
    return (1.0 - torch.softmax(logits, dim=1).max(dim=1).values).numpy()
