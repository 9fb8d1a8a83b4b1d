"""Harness-owned: the fixed architecture of the unlearning task (100-128-10 ReLU MLP).

The evaluator recomputes the outputs from the weights with exactly this function, so only the
weights an `unlearn` returns matter, never the code of its forward pass.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

N_FEATURES, HIDDEN, N_CLASSES = 100, 128, 10
# npz name -> (parameter of the nn.Sequential below, shape as stored: w1 is inputs x hidden, as sklearn stores it)
LAYOUT = {"w1": ("0.weight", (N_FEATURES, HIDDEN)), "b1": ("0.bias", (HIDDEN,)),
          "w2": ("2.weight", (HIDDEN, N_CLASSES)), "b2": ("2.bias", (N_CLASSES,))}


def make_model() -> nn.Sequential:
    return nn.Sequential(nn.Linear(N_FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, N_CLASSES))


def from_arrays(arrays: dict[str, np.ndarray]) -> nn.Sequential:
    model = make_model()
    state = {}
    for key, (param, _) in LAYOUT.items():
        value = torch.as_tensor(np.asarray(arrays[key], dtype=np.float32))
        state[param] = value.T.contiguous() if value.ndim == 2 else value
    model.load_state_dict(state)
    return model


def to_arrays(model: nn.Module) -> dict[str, np.ndarray]:
    state = model.state_dict()
    out = {}
    for key, (param, shape) in LAYOUT.items():
        value = state[param].detach().cpu().float().numpy()
        out[key] = np.ascontiguousarray(value.T if value.ndim == 2 else value)
        assert out[key].shape == shape
    return out
