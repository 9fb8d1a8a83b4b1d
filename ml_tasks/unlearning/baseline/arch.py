"""Harness-owned: the fixed architecture of the unlearning task (100-H-10 ReLU MLP; H = 128 at the lite scale).

The evaluator recomputes the outputs from the weights with exactly this function, so only the
weights an `unlearn` returns matter, never the code of its forward pass. The width H is a fact of the
task's scale: the driver reads it from the original model's weights (`set_hidden`) before it imports
`unlearn.py`, so `HIDDEN`, `make_model()` and `LAYOUT` are the scale's from then on; the evaluator
takes it from its own labels, never from anything agent code writes.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

N_FEATURES, N_CLASSES = 100, 10
HIDDEN = 128  # the lite scale's width; the driver sets the scale's with set_hidden
LAYOUT: dict[str, tuple[str, tuple[int, ...]]] = {}


def set_hidden(width: int) -> None:
    """Use networks `width` units wide: HIDDEN and LAYOUT (npz name -> (parameter of the nn.Sequential
    below, shape as stored: w1 is inputs x hidden, as sklearn stores it))."""
    global HIDDEN
    HIDDEN = int(width)
    LAYOUT.clear()
    LAYOUT.update({"w1": ("0.weight", (N_FEATURES, HIDDEN)), "b1": ("0.bias", (HIDDEN,)),
                   "w2": ("2.weight", (HIDDEN, N_CLASSES)), "b2": ("2.bias", (N_CLASSES,))})


set_hidden(HIDDEN)


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
