"""Reference solution used to measure the task (never shown to agents; the task folder is masked).

SimCLR (Chen et al. 2020) in place of the baseline's autoencoder, with augmentations that cover the
nuisance kinds the description names: a small CNN (3 conv layers with batch norm, global average pooling,
a linear layer to 32 dimensions, plus a projection head used only for the loss) is trained so that two
augmentations of an image embed close together and other images far apart (the NT-Xent loss). Each view
gets a random affine warp (shift up to `max_shift` pixels, scale, rotation; border fill), a random
brightness and contrast curve, a random smooth background wave, clutter (small patches cut from other
images of the batch, and sometimes a full-length line) and pixel noise, so that what stays the same
between the two views is the digit.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

DEFAULTS = {"epochs": 30, "batch_size": 256, "lr": 0.003, "temperature": 0.2, "max_shift": 4, "max_angle": 12.0,
            "scale": 0.15, "gamma": 0.5, "background": 0.35, "clutter": 2, "noise": 0.05, "width": 32,
            "weight_decay": 1e-4, "highpass": 5}
SIDE = 16
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


def highpass(images: torch.Tensor, size: int) -> torch.Tensor:
    """Each image minus its local mean (a size x size box), so a smooth background cancels."""
    if size <= 1:
        return images
    padded = nn.functional.pad(images, (size // 2,) * 4, mode="replicate")
    return images - nn.functional.avg_pool2d(padded, size, stride=1)


def augment(x: torch.Tensor, p: dict) -> torch.Tensor:
    """One random view of each image (n, SIDE * SIDE) -> (n, 1, SIDE, SIDE)."""
    images = x.view(-1, 1, SIDE, SIDE)
    n = len(images)
    angle = torch.deg2rad((2 * torch.rand(n) - 1) * float(p["max_angle"]))
    scale = 1 + (2 * torch.rand(n) - 1) * float(p["scale"])
    shift = (2 * torch.rand(n, 2) - 1) * float(p["max_shift"]) * 2 / SIDE
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0], theta[:, 0, 1] = torch.cos(angle) / scale, -torch.sin(angle) / scale
    theta[:, 1, 0], theta[:, 1, 1] = torch.sin(angle) / scale, torch.cos(angle) / scale
    theta[:, :, 2] = shift
    grid = nn.functional.affine_grid(theta, (n, 1, SIDE, SIDE), align_corners=False)
    out = nn.functional.grid_sample(images, grid, padding_mode="border", align_corners=False)
    gamma = torch.exp((2 * torch.rand(n, 1, 1, 1) - 1) * float(p["gamma"]))
    out = out.clamp(1e-4, 1) ** gamma * (0.6 + 0.4 * torch.rand(n, 1, 1, 1))
    # clutter: patches of other images of the batch, pasted by pixelwise maximum
    for _ in range(int(p["clutter"])):
        size = int(torch.randint(2, 5, (1,)))
        src = torch.randint(0, SIDE - size + 1, (2,))
        dst = torch.randint(0, SIDE - size + 1, (2,))
        keep = (torch.rand(n, 1, 1, 1) < 0.5).float()
        patch = out[torch.randperm(n), :, src[0]:src[0] + size, src[1]:src[1] + size]
        region = out[:, :, dst[0]:dst[0] + size, dst[1]:dst[1] + size]
        out = out.clone()
        out[:, :, dst[0]:dst[0] + size, dst[1]:dst[1] + size] = torch.maximum(region, keep * patch)
    lines = (torch.rand(n) < 0.25).nonzero().flatten()
    for i in lines.tolist():
        where, level = int(torch.randint(SIDE, (1,))), 0.3 + 0.6 * float(torch.rand(1))
        if torch.rand(1) < 0.5:
            out[i, 0, :, where] = out[i, 0, :, where].clamp(min=level)
        else:
            out[i, 0, where, :] = out[i, 0, where, :].clamp(min=level)
    coords = (torch.arange(SIDE, dtype=torch.float32) / SIDE)
    yy, xx = coords.view(1, SIDE, 1), coords.view(1, 1, SIDE)
    direction, phase = 2 * math.pi * torch.rand(n, 1, 1), 2 * math.pi * torch.rand(n, 1, 1)
    freq, amp = 0.3 + 1.2 * torch.rand(n, 1, 1), float(p["background"]) * torch.rand(n, 1, 1)
    angle_arg = 2 * math.pi * freq * (torch.cos(direction) * xx + torch.sin(direction) * yy) + phase
    wave = amp * 0.5 * (1 + torch.cos(angle_arg))
    out = out + (1 - out) * wave.unsqueeze(1)
    return highpass((out + float(p["noise"]) * torch.randn_like(out)).clamp(0, 1), int(p["highpass"]))


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> torch.Tensor:
    z = nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    sim = z @ z.T / temperature
    sim.fill_diagonal_(float("-inf"))
    n = len(z1)
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
    return nn.functional.cross_entropy(sim, targets)


def pretrain(x_unlabeled: np.ndarray, params: dict, device: str) -> Encoder:
    p = {**DEFAULTS, **params}
    model = Encoder(int(p["width"]))
    data = torch.as_tensor(x_unlabeled, dtype=torch.float32)
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(p["lr"]), weight_decay=float(p["weight_decay"]))
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, int(p["epochs"]))
    batch = int(p["batch_size"])
    model.train()
    for _ in range(int(p["epochs"])):
        order = torch.randperm(len(data))
        for start in range(0, len(data) - 1, batch):
            x = data[order[start:start + batch]]
            if len(x) < 2:
                continue
            z1, z2 = model.head(model(augment(x, p))), model.head(model(augment(x, p)))
            loss = nt_xent(z1, z2, float(p["temperature"]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        schedule.step()
    return model.eval()


@torch.no_grad()
def embed(encoder: Encoder, x: np.ndarray, params: dict, device: str) -> np.ndarray:
    p = {**DEFAULTS, **params}
    images = torch.as_tensor(x, dtype=torch.float32).view(-1, 1, SIDE, SIDE)
    return encoder(highpass(images, int(p["highpass"]))).numpy()
