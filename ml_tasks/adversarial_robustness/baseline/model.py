"""Baseline: standard training (cross-entropy on the clean images) of a ReLU MLP, in plain torch.

No defence: the network is trained only to be accurate, the obvious first model. Everything here may
be changed; train_model must return a family.RobustMLP (the evaluator rebuilds that architecture from
the weights, so only the weights matter).
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from family import RobustMLP


def train_model(x: np.ndarray, y: np.ndarray, params: dict, device: str) -> RobustMLP:
    """x: (n, 100) float32 values in [0, 1]; y: (n,) int labels 0..9. The driver has seeded torch."""
    net = RobustMLP([int(params["width"])] * int(params["depth"])).to(device)
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
    return net.eval().cpu()
