"""Reading the public data a driver hands to agent code: a missing file or column is a DriverError."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .errors import DriverError


def read_table(path: Path, required: list[str] | tuple[str, ...] = ()) -> pd.DataFrame:
    """A CSV file that must exist and hold the `required` columns."""
    if not path.is_file():
        raise DriverError(f"expected data file {path} does not exist")
    frame = pd.read_csv(path)
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise DriverError(f"{path.name} lacks columns {missing}")
    return frame


def read_npz(path: Path, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The named arrays of an .npz file (never pickles), which must exist and hold every key."""
    if not path.is_file():
        raise DriverError(f"expected data file {path} does not exist")
    with np.load(path, allow_pickle=False) as data:
        missing = [k for k in keys if k not in data.files]
        if missing:
            raise DriverError(f"{path.name} lacks arrays {missing}")
        return {k: data[k] for k in keys}
