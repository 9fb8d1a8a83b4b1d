"""Checking what agent code returned before the driver uses it or hands it on.

Agent code is hostile: its return values (and, across the isolation boundary, the files a child
wrote) are checked for type, shape, range and size, and every failure is a DriverError naming the
function (`where`) and what was expected. Only plain numeric arrays cross a process boundary, never
pickles.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .errors import DriverError


def _floats(raw: Any, where: str) -> np.ndarray:
    """Numbers as a float array (a torch tensor is moved to the CPU first)."""
    if hasattr(raw, "detach"):
        raw = raw.detach().cpu().numpy()
    try:
        return np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DriverError(f"{where} must return numbers ({exc})") from None


def as_vector(raw: Any, n_rows: int, where: str, unit: str = "value") -> np.ndarray:
    """One number per input row, as floats of shape (n_rows,); a column (n_rows, 1) is flattened.
    Finiteness and allowed values are the caller's to check: they differ by task."""
    values = _floats(raw, where)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.shape != (n_rows,):
        raise DriverError(f"{where} returned shape {values.shape}; expected ({n_rows},), one {unit} per input row")
    return values


def as_arrays(raw: Any, budget: int, where: str) -> dict[str, np.ndarray]:
    """A dict of plain numeric arrays (tensors are converted) holding at most `budget` numbers in total."""
    if not isinstance(raw, dict):
        raise DriverError(f"{where} must return a dict of arrays, got {type(raw).__name__}")
    state: dict[str, np.ndarray] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z0-9_]{1,64}", key):
            raise DriverError(f"{where}: keys must be 1-64 letters, digits or '_', got {key!r}"[:200])
        if hasattr(value, "detach"):
            value = value.detach().cpu().numpy()
        array = np.asarray(value)
        if array.dtype.kind not in "biuf":
            raise DriverError(f"{where}: [{key!r}] must be numeric, got dtype {array.dtype}")
        state[key] = array
    total = sum(a.size for a in state.values())
    if total > budget:
        raise DriverError(f"{where}: returned {total} numbers; the budget is {budget}")
    return state


def load_arrays(path: Path, budget: int, where: str) -> dict[str, np.ndarray]:
    """Read arrays a child wrote: untrusted, so sizes are checked before anything is loaded."""
    cap = budget * 8 + (1 << 20)  # bytes: float64 at most, plus npz overhead
    if path.is_symlink() or not path.is_file() or path.stat().st_size > cap:
        raise DriverError(f"{where}: its result file is missing or too large")
    try:
        with zipfile.ZipFile(path) as archive:
            if sum(i.file_size for i in archive.infolist()) > cap:
                raise DriverError(f"{where}: returned more than {budget} numbers")
        with np.load(path, allow_pickle=False) as data:
            raw = {k: data[k] for k in data.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise DriverError(f"{where}: its result file is unreadable ({type(exc).__name__})") from None
    return as_arrays(raw, budget, where)


def as_labels(raw: Any, n: int, where: str, n_classes: int = 10) -> np.ndarray:
    """One class in 0..n_classes-1 per input row; class scores of shape (n, n_classes) are reduced by argmax."""
    values = _floats(raw, where)
    if values.shape == (n, n_classes):
        if not np.isfinite(values).all():
            raise DriverError(f"{where} returned non-finite class scores")
        return values.argmax(axis=1).astype(np.int64)
    if values.shape != (n,):
        raise DriverError(f"{where} returned shape {values.shape}; expected ({n},) labels or ({n}, {n_classes}) scores")
    if not np.isfinite(values).all() or not np.array_equal(values, np.round(values)) or values.min() < 0 \
            or values.max() >= n_classes:
        raise DriverError(f"{where} must return integer labels in 0..{n_classes - 1}")
    return values.astype(np.int64)


def load_labels(path: Path, n: int, where: str, n_classes: int = 10) -> np.ndarray:
    """Read the labels a child saved with np.save: untrusted, size-checked first."""
    if path.is_symlink() or not path.is_file() or path.stat().st_size > 16 * n + 4096:
        raise DriverError(f"{where}: its labels file is missing or too large")
    try:
        raw = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DriverError(f"{where}: its labels file is unreadable ({type(exc).__name__})") from None
    return as_labels(raw, n, where, n_classes)
