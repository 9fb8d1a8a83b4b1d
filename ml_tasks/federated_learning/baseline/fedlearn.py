"""Federated learning on non-IID digit shards: the file you improve.

The driver (harness-owned) runs every call below in its own locked process (see the description):

    init_model(params, device) -> model                                     the first broadcast
    client_update(model, client_state, x, y, params, device) -> (update, client_state)
    server_aggregate(model, updates, sizes, server_state, params, device) -> (model, server_state)
    predict(model, x, params, device) -> labels (n,) or class scores (n, 10)

Models, updates and states are dicts of numeric arrays (numpy or torch): at most 5,000 numbers per
message (model or update), 5,000 per client state, 10,000 for the server state; None means no state.
This baseline is FedAvg (McMahan et al. 2017) with an 81-48-10 MLP: each client runs local SGD epochs
from the broadcast weights and sends its new weights; the server averages them weighted by shard size.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

PIXELS = 81  # a 9x9 canvas
DEFAULTS = {"hidden": 48, "local_epochs": 5, "lr": 0.1, "batch_size": 10, "momentum": 0.9}


def make_model(params: dict) -> nn.Module:
    return nn.Sequential(nn.Linear(PIXELS, int(params["hidden"])), nn.ReLU(), nn.Linear(int(params["hidden"]), 10))


def key(name: str) -> str:
    return name.replace(".", "_")


def load(arrays: dict, params: dict, device: str) -> nn.Module:
    model = make_model(params)
    model.load_state_dict({k: torch.as_tensor(arrays[key(k)]) for k in model.state_dict()})
    return model.to(device)


def dump(model: nn.Module) -> dict[str, np.ndarray]:
    return {key(k): v.detach().cpu().numpy() for k, v in model.state_dict().items()}


def init_model(params: dict, device: str) -> dict[str, np.ndarray]:
    return dump(make_model({**DEFAULTS, **params}))


def client_update(model: dict, client_state: dict | None, x: np.ndarray, y: np.ndarray, params: dict,
                  device: str) -> tuple[dict, dict | None]:
    p = {**DEFAULTS, **params}
    net = load(model, p, device)
    xt = torch.as_tensor(x, dtype=torch.float32, device=device)
    yt = torch.as_tensor(y, dtype=torch.long, device=device)
    optimizer = torch.optim.SGD(net.parameters(), lr=float(p["lr"]), momentum=float(p["momentum"]))
    batch = int(p["batch_size"])
    for _ in range(int(p["local_epochs"])):
        order = torch.randperm(len(xt), device=device)
        for start in range(0, len(xt), batch):
            idx = order[start:start + batch]
            loss = nn.functional.cross_entropy(net(xt[idx]), yt[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return dump(net), None


def server_aggregate(model: dict, updates: list[dict], sizes: list[int], server_state: dict | None,
                     params: dict, device: str) -> tuple[dict, dict | None]:
    weights = np.asarray(sizes, dtype=float) / float(sum(sizes))
    return {k: sum(w * u[k] for w, u in zip(weights, updates)).astype(np.float32) for k in model}, None


@torch.no_grad()
def predict(model: dict, x: np.ndarray, params: dict, device: str) -> np.ndarray:
    net = load(model, {**DEFAULTS, **params}, device).eval()
    return net(torch.as_tensor(x, dtype=torch.float32, device=device)).argmax(1).cpu().numpy()
