"""Reference unlearning that sets the target (never shown to agents; the task folder is masked).

Forgetting means: on the forget set, behave like a model that never saw those images. The reference
builds such a model and copies its behaviour:
1. a *proxy* (a fresh network of the same architecture) is distilled from the original on the
   retained images only, each batch also shown shifted by up to 2 pixels on the canvas (the data's
   own nuisance), so it generalizes about as well as the original without ever seeing a forget image;
2. the original is then fine-tuned to keep its own outputs and the labels on the retained images
   (and their shifted copies: that preserves how it generalizes) while matching the proxy's
   predictions on the forget set: forgotten images get the loss *and* the errors of unseen ones,
   which hides them from both the loss and the label-only attack.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

import arch

DEFAULTS = {"proxy_epochs": 200, "proxy_lr": 0.003, "epochs": 60, "lr": 0.001, "forget_weight": 1.0,
            "batch_size": 32, "max_shift": 2}
SIDE = 10  # the images are 10x10 canvases, flattened row-major


def shifted(x: torch.Tensor, generator: torch.Generator, max_shift: int) -> torch.Tensor:
    """The batch rolled by one random (dy, dx) offset on the canvas (the digits sit on a blank border)."""
    dy, dx = torch.randint(-max_shift, max_shift + 1, (2,), generator=generator).tolist()
    return torch.roll(x.view(-1, SIDE, SIDE), (dy, dx), (1, 2)).reshape(len(x), -1)


def distil_proxy(teacher: nn.Module, rx: torch.Tensor, ry: torch.Tensor, p: dict, generator: torch.Generator,
                 device: str) -> nn.Module:
    proxy = arch.make_model().to(device)
    optimizer = torch.optim.Adam(proxy.parameters(), lr=float(p["proxy_lr"]), weight_decay=1e-4)
    batch = int(p["batch_size"])
    for _ in range(int(p["proxy_epochs"])):
        order = torch.randperm(len(rx), device=device)
        for start in range(0, len(rx), batch):
            idx = order[start:start + batch]
            xb = torch.cat([rx[idx], shifted(rx[idx], generator, int(p["max_shift"]))])
            yb = torch.cat([ry[idx], ry[idx]])
            with torch.no_grad():
                soft = torch.softmax(teacher(xb), dim=1)
            log_p = torch.log_softmax(proxy(xb), dim=1)
            loss = nn.functional.kl_div(log_p, soft, reduction="batchmean") + nn.functional.nll_loss(log_p, yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return proxy.eval()


def unlearn(model, forget_x, forget_y, retain_x, retain_y, params, device):
    p = {**DEFAULTS, **params}
    generator = torch.Generator().manual_seed(int(torch.randint(0, 2**31 - 1, (1,)).item()))
    teacher = copy.deepcopy(model).eval()
    fx = torch.as_tensor(forget_x, device=device)
    rx = torch.as_tensor(retain_x, device=device)
    ry = torch.as_tensor(retain_y, device=device)
    proxy = distil_proxy(teacher, rx, ry, p, generator, device)
    with torch.no_grad():
        soft_forget = torch.softmax(proxy(fx), dim=1)
        soft_retain = torch.softmax(teacher(rx), dim=1)
    optimizer = torch.optim.Adam(model.parameters(), lr=float(p["lr"]))
    batch = int(p["batch_size"])
    for _ in range(int(p["epochs"])):
        order_r, order_f = torch.randperm(len(rx), device=device), torch.randperm(len(fx), device=device)
        for i, start in enumerate(range(0, len(rx), batch)):
            r = order_r[start:start + batch]
            f = order_f[(i * batch) % len(fx):(i * batch) % len(fx) + batch]
            log_r = torch.log_softmax(model(rx[r]), dim=1)
            loss = nn.functional.nll_loss(log_r, ry[r]) + nn.functional.kl_div(log_r, soft_retain[r], reduction="batchmean")
            xa = shifted(rx[r], generator, int(p["max_shift"]))
            with torch.no_grad():
                soft_shifted = torch.softmax(teacher(xa), dim=1)
            loss = loss + nn.functional.kl_div(torch.log_softmax(model(xa), dim=1), soft_shifted, reduction="batchmean")
            if len(f):
                log_f = torch.log_softmax(model(fx[f]), dim=1)
                loss = loss + float(p["forget_weight"]) * nn.functional.kl_div(log_f, soft_forget[f], reduction="batchmean")
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model.eval()
