"""Machine unlearning: the file you improve.

The driver (harness-owned) calls

    unlearn(model, forget_x, forget_y, retain_x, retain_y, params, device) -> model

`model` is the original classifier (arch.py: a 100-128-10 ReLU MLP in torch) trained on all training
images, the forget set included. Return a module of the same architecture (modify `model` in place
or build a new one with arch.make_model()) that behaves as if the forget set had never been seen
while keeping what it learned from the retained images. You get the forget set (every image of one
writer) and an eighth of the retained images (`retain_x, retain_y`); the other retained images are
hidden and used to score.
This baseline is NegGrad+ (fine-tuning that descends the loss on retained images and ascends it on
forgotten ones; Kurmanji et al. 2023 compare it with SCRUB).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

DEFAULTS = {"epochs": 5, "lr": 0.01, "batch_size": 32, "forget_weight": 0.2, "weight_decay": 0.0}


def unlearn(model: nn.Module, forget_x: np.ndarray, forget_y: np.ndarray, retain_x: np.ndarray,
            retain_y: np.ndarray, params: dict, device: str) -> nn.Module:
    p = {**DEFAULTS, **params}
    fx = torch.as_tensor(forget_x, dtype=torch.float32, device=device)
    fy = torch.as_tensor(forget_y, dtype=torch.long, device=device)
    rx = torch.as_tensor(retain_x, dtype=torch.float32, device=device)
    ry = torch.as_tensor(retain_y, dtype=torch.long, device=device)
    optimizer = torch.optim.SGD(model.parameters(), lr=float(p["lr"]), momentum=0.9,
                                weight_decay=float(p["weight_decay"]))
    batch = int(p["batch_size"])
    model.train()
    for _ in range(int(p["epochs"])):
        retain_order = torch.randperm(len(rx), device=device)
        forget_order = torch.randperm(len(fx), device=device)
        for i, start in enumerate(range(0, len(rx), batch)):
            r = retain_order[start:start + batch]
            f = forget_order[(i * batch) % len(fx):(i * batch) % len(fx) + batch]
            loss = nn.functional.cross_entropy(model(rx[r]), ry[r])
            if len(f):
                loss = loss - float(p["forget_weight"]) * nn.functional.cross_entropy(model(fx[f]), fy[f])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model.eval()
