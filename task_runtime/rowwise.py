"""Calling a model on its inputs so that each output provably depends on its own input row alone.

Where a task scores one prediction per input (domain generalization, OOD detection, semi-supervised
learning), the inputs to predict are not training data: a model that pooled them (the test
environment's colour statistics, clusters of the test images) would learn from them. The driver
therefore calls the model on chunks of CHUNK rows, twice, once in input order and once in a seeded
random order, and rejects outputs that differ between the two passes.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from .errors import DriverError
from .returned import as_vector

CHUNK = 32  # rows per call: small enough that a batch's statistics say little about any one row


def _one_pass(call: Callable[[np.ndarray], object], x: np.ndarray, order: np.ndarray, where: str, unit: str,
              n_labels: Optional[int], chunk: int) -> np.ndarray:
    out = np.empty(len(x), dtype=np.float64)
    for start in range(0, len(x), chunk):
        idx = order[start:start + chunk]
        values = as_vector(call(x[idx].copy()), len(idx), where, unit)
        if n_labels is not None and not np.isin(values, np.arange(n_labels)).all():
            raise DriverError(f"{where} must return labels 0..{n_labels - 1}")
        bad = int((~np.isfinite(values)).sum())
        if bad:
            raise DriverError(f"{where} returned {bad} non-finite values (NaN or inf)")
        out[idx] = values
    return out


def predict_per_row(call: Callable[[np.ndarray], object], x: np.ndarray, ids: np.ndarray, seed: int, where: str, *,
                    unit: str = "row", n_labels: Optional[int] = None, rtol: float = 0.0, atol: float = 0.0,
                    chunk: int = CHUNK) -> np.ndarray:
    """`call(rows)` on every row of `x`, in chunks, in two orders (the second drawn from `seed`): one
    value per row, int64 labels 0..n_labels-1 when `n_labels` is given, else finite float64 scores.

    Values of a row that differ between the passes by more than `rtol`/`atol` (exactly, by default)
    are a DriverError naming the row's id; so is a chunk's output of the wrong shape or range."""
    first = _one_pass(call, x, np.arange(len(x)), where, unit, n_labels, chunk)
    second = _one_pass(call, x, np.random.default_rng(seed + 1).permutation(len(x)), where, unit, n_labels, chunk)
    differ = ~np.isclose(first, second, rtol=rtol, atol=atol)
    if differ.any():
        row = int(np.flatnonzero(differ)[0])
        raise DriverError(f"{where} is not a function of each {unit} alone: {unit} id {int(ids[row])} got "
                          f"{first[row]:.6g} and {second[row]:.6g} in two passes")
    return first.astype(np.int64) if n_labels is not None else first
