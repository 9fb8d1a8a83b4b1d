"""Reference solution used to measure the target (never shown to agents; the task folder is masked).

SimCLR (Chen et al. 2020) in place of the baseline's autoencoder: a small CNN (3 conv layers with batch
norm, global average pooling, a linear layer to 32 dimensions, plus a projection head used only for the
loss) is trained so that two augmentations of an image embed close together and other images far apart
(the NT-Xent loss). The augmentations cover the nuisance: a random shift of up to `max_shift` pixels
(params.json: 4, the full displacement range) and Gaussian pixel noise, so the code learns the digit
and ignores its position.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

DEFAULTS = {"epochs": 10, "batch_size": 256, "lr": 0.003, "temperature": 0.2, "max_shift": 2, "noise": 0.05,
            "width": 32, "weight_decay": 1e-4}
SIDE = 12
EMBED_DIM = 32


class Encoder(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * width, EMBED_DIM))
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(EMBED_DIM, 64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.features(x.view(-1, 1, SIDE, SIDE))


def augment(x: torch.Tensor, max_shift: int, noise: float) -> torch.Tensor:
    """A random translation (zero fill) and Gaussian pixel noise per image."""
    images = x.view(-1, 1, SIDE, SIDE)
    padded = nn.functional.pad(images, (max_shift,) * 4)
    n = len(images)
    dy = torch.randint(0, 2 * max_shift + 1, (n,))
    dx = torch.randint(0, 2 * max_shift + 1, (n,))
    rows = (dy.view(n, 1) + torch.arange(SIDE).view(1, SIDE)).to(x.device)
    cols = (dx.view(n, 1) + torch.arange(SIDE).view(1, SIDE)).to(x.device)
    idx = torch.arange(n, device=x.device).view(n, 1, 1)
    shifted = padded[idx, 0, rows.view(n, SIDE, 1), cols.view(n, 1, SIDE)].unsqueeze(1)
    return (shifted + noise * torch.randn_like(shifted)).clamp(0, 1)


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> torch.Tensor:
    z = nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    sim = z @ z.T / temperature
    sim.fill_diagonal_(float("-inf"))
    n = len(z1)
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
    return nn.functional.cross_entropy(sim, targets)


def pretrain(x_unlabeled: np.ndarray, params: dict, device: str) -> Encoder:
    p = {**DEFAULTS, **params}
    model = Encoder(int(p["width"])).to(device)
    data = torch.as_tensor(x_unlabeled, dtype=torch.float32, device=device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(p["lr"]), weight_decay=float(p["weight_decay"]))
    batch = int(p["batch_size"])
    model.train()
    for _ in range(int(p["epochs"])):
        order = torch.randperm(len(data), device=device)
        for start in range(0, len(data) - 1, batch):
            x = data[order[start:start + batch]]
            if len(x) < 2:
                continue
            z1 = model.head(model(augment(x, int(p["max_shift"]), float(p["noise"]))))
            z2 = model.head(model(augment(x, int(p["max_shift"]), float(p["noise"]))))
            loss = nt_xent(z1, z2, float(p["temperature"]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model.eval()


@torch.no_grad()
def embed(encoder: Encoder, x: np.ndarray, params: dict, device: str) -> np.ndarray:
    return encoder(torch.as_tensor(x, dtype=torch.float32, device=device)).cpu().numpy()
