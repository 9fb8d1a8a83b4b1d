"""Reference unlearning used to measure the target (never shown to agents; the task folder is masked).

Measured with params.json {"temperature": 2.0}. Distil the original model into itself on the retained images (keeping what it knows about them)
while teaching it, on the forget set, the original's predictions softened by a temperature: a
model that never trained on an image is less sure about it, so forgotten images end up with the
loss profile of unseen ones instead of the near-zero loss of memorised members.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

DEFAULTS = {"epochs": 30, "lr": 0.005, "temperature": 3.0, "forget_weight": 1.0, "batch_size": 32}


def unlearn(model, forget_x, forget_y, retain_x, retain_y, params, device):
    p = {**DEFAULTS, **params}
    teacher = copy.deepcopy(model).eval()
    fx = torch.as_tensor(forget_x, device=device)
    rx = torch.as_tensor(retain_x, device=device)
    ry = torch.as_tensor(retain_y, device=device)
    with torch.no_grad():
        soft_forget = torch.softmax(teacher(fx) / float(p["temperature"]), dim=1)
        soft_retain = torch.softmax(teacher(rx), dim=1)
    optimizer = torch.optim.Adam(model.parameters(), lr=float(p["lr"]))
    batch = int(p["batch_size"])
    for _ in range(int(p["epochs"])):
        order_r, order_f = torch.randperm(len(rx)), torch.randperm(len(fx))
        for i, s in enumerate(range(0, len(rx), batch)):
            r = order_r[s:s + batch]
            f = order_f[(i * batch) % len(fx):(i * batch) % len(fx) + batch]
            log_r = torch.log_softmax(model(rx[r]), dim=1)
            loss = nn.functional.nll_loss(log_r, ry[r]) + nn.functional.kl_div(log_r, soft_retain[r], reduction="batchmean")
            if len(f):
                log_f = torch.log_softmax(model(fx[f]), dim=1)
                loss = loss + float(p["forget_weight"]) * nn.functional.kl_div(log_f, soft_forget[f], reduction="batchmean")
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model.eval()
