"""A class-incremental learner for split digits: the file you improve.

The driver calls, in its own locked process per split (see the description):

    train_split(state, x, y, classes, split, params, device) -> new state (dict of arrays)
    predict(state, x, params, device) -> labels (n,) or class scores (n, 10)

`state` is everything carried from one split to the next (None before split 0): at most 20,000
numbers in total, weights included. This baseline is online EWC (Kirkpatrick et al. 2017; Schwarz
et al. 2018) on a 144-32-10 MLP over the raw pixels: weights, the running diagonal Fisher and the
anchor weights (3 x 4,970 numbers). It uses no replay.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

DEFAULTS = {"hidden": 32, "epochs": 10, "lr": 0.01, "batch_size": 32, "ewc_lambda": 100.0, "gamma": 1.0}


def make_model(inputs: int, hidden: int) -> nn.Module:
    return nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def to_model(state: dict | None, inputs: int, hidden: int, device: str) -> nn.Module:
    model = make_model(inputs, hidden)
    if state is not None:
        model.load_state_dict({k: torch.as_tensor(state[f"w_{k.replace('.', '_')}"]) for k in model.state_dict()})
    return model.to(device)


def flat(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.reshape(-1) for p in model.parameters()])


def fisher_diagonal(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Empirical Fisher: the mean squared per-example gradient of the log-likelihood (torch.func)."""
    weights = {k: v.detach() for k, v in model.named_parameters()}

    def loss(w: dict, xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
        out = torch.func.functional_call(model, w, (xi.unsqueeze(0),))
        return nn.functional.cross_entropy(out, yi.unsqueeze(0))

    grads = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(weights, x, y)
    return torch.cat([(grads[k] ** 2).mean(0).reshape(-1) for k, _ in model.named_parameters()])


def train_split(state: dict | None, x: np.ndarray, y: np.ndarray, classes: list[int], split: int,
                params: dict, device: str) -> dict[str, np.ndarray]:
    p = {**DEFAULTS, **params}
    model = to_model(state, x.shape[1], int(p["hidden"]), device)
    xt = torch.as_tensor(x, dtype=torch.float32, device=device)
    yt = torch.as_tensor(y, dtype=torch.long, device=device)
    fisher = torch.as_tensor(state["fisher"], device=device) if state is not None else None
    anchor = torch.as_tensor(state["anchor"], device=device) if state is not None else None
    optimizer = torch.optim.SGD(model.parameters(), lr=float(p["lr"]), momentum=0.9)
    batch = int(p["batch_size"])
    for _ in range(int(p["epochs"])):
        order = torch.randperm(len(xt), device=device)
        for start in range(0, len(xt), batch):
            idx = order[start:start + batch]
            loss = nn.functional.cross_entropy(model(xt[idx]), yt[idx])
            if fisher is not None:
                loss = loss + 0.5 * float(p["ewc_lambda"]) * (fisher * (flat(model) - anchor) ** 2).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    new_fisher = fisher_diagonal(model, xt, yt).detach()
    if fisher is not None:
        new_fisher = float(p["gamma"]) * fisher + new_fisher
    out = {f"w_{k.replace('.', '_')}": v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    out["fisher"] = new_fisher.cpu().numpy()
    out["anchor"] = flat(model).detach().cpu().numpy()
    return out


@torch.no_grad()
def predict(state: dict, x: np.ndarray, params: dict, device: str) -> np.ndarray:
    p = {**DEFAULTS, **params}
    model = to_model(state, x.shape[1], int(p["hidden"]), device).eval()
    return model(torch.as_tensor(x, dtype=torch.float32, device=device)).argmax(1).cpu().numpy()
