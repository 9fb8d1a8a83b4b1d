"""The model family of the adversarial_robustness task (harness-owned; restored before every run).

A model is a plain ReLU MLP on an image's 100 values (columns x0..x99, scaled to [0, 1]) with 10 logits:
`Linear(100, h1) -> ReLU -> ... -> Linear(h_k, 10)`, 0 to 4 hidden layers of 1 to 512 units. The
agent chooses the widths and trains the weights however it likes; only the weights cross into the
evaluator, as a safetensors file (tensors and a JSON header: nothing in it can run code, unlike a
pickle). The evaluator rebuilds the network from this module and runs the attack on its own forward
pass, so agent code cannot add preprocessing, randomness or non-differentiable layers to what is
attacked.

Limits (checked on load): every tensor finite with |value| <= MAX_ABS_WEIGHT. With inputs in [0, 1]
that bound keeps every logit far from float32 overflow, so huge weights cannot produce inf/NaN
gradients either.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import torch
from torch import nn

INPUT_DIM = 100  # a 10 x 10 canvas, its values in the data's (undisclosed) column order
FEATURES = [f"x{i}" for i in range(INPUT_DIM)]  # the data's value columns, in the order the network reads them
N_CLASSES = 10
MAX_HIDDEN_LAYERS = 4
MAX_WIDTH = 512
MAX_ABS_WEIGHT = 1e3


class FamilyError(ValueError):
    """A model outside the family; the message is one line about what is wrong."""


def check_hidden(hidden: Sequence[int]) -> list[int]:
    widths = list(hidden)
    if len(widths) > MAX_HIDDEN_LAYERS:
        raise FamilyError(f"{len(widths)} hidden layers; at most {MAX_HIDDEN_LAYERS} are allowed")
    for w in widths:
        if not isinstance(w, (int, np.integer)) or isinstance(w, bool) or not 1 <= w <= MAX_WIDTH:
            raise FamilyError(f"hidden width {w!r} must be an integer in 1..{MAX_WIDTH}")
    return [int(w) for w in widths]


class RobustMLP(nn.Module):
    """The only architecture the evaluator attacks: Linear/ReLU layers, logits out."""

    def __init__(self, hidden: Sequence[int] = (256, 256)):
        super().__init__()
        dims = [INPUT_DIM, *check_hidden(hidden), N_CLASSES]
        self.hidden = dims[1:-1]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(x.shape[0], -1)  # accepts (n, 100) and image-shaped (n, 1, 10, 10) batches
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x


def to_tensors(net: RobustMLP) -> dict[str, np.ndarray]:
    """The weights as named float32 arrays, the only thing that leaves the agent's process."""
    out = {}
    for i, layer in enumerate(net.layers):
        if not isinstance(layer, nn.Linear):
            raise FamilyError(f"layer {i} is a {type(layer).__name__}, not nn.Linear")
        out[f"layers.{i}.weight"] = np.ascontiguousarray(layer.weight.detach().cpu().numpy(), dtype=np.float32)
        if layer.bias is None:
            raise FamilyError(f"layer {i} has no bias")
        out[f"layers.{i}.bias"] = np.ascontiguousarray(layer.bias.detach().cpu().numpy(), dtype=np.float32)
    return out


def from_tensors(tensors: Mapping[str, np.ndarray]) -> RobustMLP:
    """Rebuild a RobustMLP from named arrays, rejecting anything outside the family with one line."""
    n_layers = len(tensors) // 2
    expected = {f"layers.{i}.{kind}" for i in range(n_layers) for kind in ("weight", "bias")}
    if len(tensors) % 2 or set(tensors) != expected or not 1 <= n_layers <= MAX_HIDDEN_LAYERS + 1:
        shown = ", ".join(sorted(tensors)[:6])
        raise FamilyError(f"expected tensors layers.<i>.weight and layers.<i>.bias for 1..{MAX_HIDDEN_LAYERS + 1} "
                          f"layers, got [{shown}{', ...' if len(tensors) > 6 else ''}]")
    dims = [INPUT_DIM]
    for i in range(n_layers):
        w, b = tensors[f"layers.{i}.weight"], tensors[f"layers.{i}.bias"]
        out_dim = N_CLASSES if i == n_layers - 1 else (w.shape[0] if w.ndim == 2 else -1)
        if w.shape != (out_dim, dims[-1]) or b.shape != (out_dim,):
            raise FamilyError(f"layer {i}: weight {tuple(w.shape)} and bias {tuple(b.shape)} do not chain "
                              f"from {dims[-1]} inputs (the last layer must give {N_CLASSES} logits)")
        dims.append(out_dim)
    net = RobustMLP(dims[1:-1])
    with torch.no_grad():
        for i, layer in enumerate(net.layers):
            for kind in ("weight", "bias"):
                value = np.asarray(tensors[f"layers.{i}.{kind}"])
                if value.dtype.kind != "f":
                    raise FamilyError(f"layers.{i}.{kind} has dtype {value.dtype}; floating point is required")
                value = value.astype(np.float32)
                if not np.isfinite(value).all():
                    raise FamilyError(f"layers.{i}.{kind} holds NaN or infinite values")
                if np.abs(value).max(initial=0.0) > MAX_ABS_WEIGHT:
                    raise FamilyError(f"layers.{i}.{kind} has a value of magnitude > {MAX_ABS_WEIGHT:g}")
                getattr(layer, kind).copy_(torch.from_numpy(value))
    return net.eval()
