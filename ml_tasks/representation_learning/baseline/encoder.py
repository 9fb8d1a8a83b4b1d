"""Self-supervised representation learning for digits under nuisances: the file you improve.

The driver (harness-owned) calls

    pretrain(x_unlabeled, params, device) -> encoder        any object your embed() understands
    embed(encoder, x, params, device) -> (n, d) array       d <= 32, finite

Inputs are 16x16 images flattened to 256 floats in [0, 1] (row-major). The harness trains and scores
the linear probe on your embeddings; you never see a label. This baseline is a denoising autoencoder
(Vincent et al. 2008): an MLP encoder maps a noisy copy of each image to a `dim`-dimensional code, an
MLP decoder reconstructs the clean image from it (mean squared error), and the probe uses the code.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

DEFAULTS = {"epochs": 30, "batch_size": 64, "lr": 0.001, "hidden": 256, "dim": 32, "noise": 0.1,
            "weight_decay": 1e-5}
PIXELS = 256


class Autoencoder(nn.Module):
    def __init__(self, hidden: int, dim: int):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(PIXELS, hidden), nn.ReLU(), nn.Linear(hidden, dim))
        self.decoder = nn.Sequential(nn.ReLU(), nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, PIXELS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)


def pretrain(x_unlabeled: np.ndarray, params: dict, device: str) -> Autoencoder:
    p = {**DEFAULTS, **params}
    model = Autoencoder(int(p["hidden"]), int(p["dim"])).to(device)
    data = torch.as_tensor(x_unlabeled, dtype=torch.float32, device=device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(p["lr"]), weight_decay=float(p["weight_decay"]))
    batch = int(p["batch_size"])
    model.train()
    for _ in range(int(p["epochs"])):
        order = torch.randperm(len(data), device=device)
        for start in range(0, len(data), batch):
            x = data[order[start:start + batch]]
            noisy = (x + float(p["noise"]) * torch.randn_like(x)).clamp(0, 1)
            loss = nn.functional.mse_loss(model.decoder(model.encoder(noisy)), x)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model.eval()


@torch.no_grad()
def embed(encoder: Autoencoder, x: np.ndarray, params: dict, device: str) -> np.ndarray:
    return encoder(torch.as_tensor(x, dtype=torch.float32, device=device)).cpu().numpy()
