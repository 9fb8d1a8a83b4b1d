"""Reading predictions in an evaluator: the file was written by agent code, so every step checks it.

Each failure raises InvalidPredictions with one line about the predictions (never about the labels),
which `evaluator_main` prints for the harness to show the agent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import InvalidPredictions

_READ_ERRORS = (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError)


def read_predictions(path: Path, columns: list[str], *, max_bytes: int | None = None,
                     **read_csv: Any) -> pd.DataFrame:
    """The `columns` of a CSV file that must exist, stay under `max_bytes` and parse; extra columns are dropped.

    `read_csv` is passed to pandas (e.g. dtype=str, keep_default_na=False to check values yourself)."""
    if not path.is_file():
        raise InvalidPredictions(f"{path.name} was not written")
    if max_bytes is not None and path.stat().st_size > max_bytes:
        raise InvalidPredictions(f"{path.name} is larger than {max_bytes} bytes")
    try:
        frame = pd.read_csv(path, **read_csv)
    except _READ_ERRORS as exc:
        first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise InvalidPredictions(f"{path.name} is not a readable CSV: {first}") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InvalidPredictions(f"{path.name} lacks columns {missing} (needs {', '.join(columns)})")
    return frame[columns].copy()


def integer_column(frame: pd.DataFrame, col: str, name: str, what: str = "integers") -> np.ndarray:
    """Column `col` as int64; any value that is not a finite whole number is an error naming file `name`."""
    values = pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=float)
    if not np.isfinite(values).all() or not np.array_equal(values, np.round(values)):
        raise InvalidPredictions(f"{name}: column {col} must hold {what}")
    return values.astype(np.int64)


def _rows(keys: list[str]) -> str:
    return "ids" if keys == ["id"] else f"({', '.join(keys)}) rows"


def _example(frame: pd.DataFrame, keys: list[str]) -> str:
    first = frame[keys].iloc[0]
    return " ".join(f"{k} {first[k]}" for k in keys) if len(keys) > 1 else str(first[keys[0]])


def match_ids(pred: pd.DataFrame, expected: pd.DataFrame, keys: list[str],
              suffixes: tuple[str, str] = ("_x", "_y")) -> pd.DataFrame:
    """`expected` joined with `pred` on `keys`: exactly one prediction for every expected key and no other.

    Duplicated, missing or unexpected keys are an error that counts them and names the first one."""
    dup = pred.duplicated(keys)
    if dup.any():
        raise InvalidPredictions(f"{int(dup.sum())} duplicated {_rows(keys)}, e.g. {_example(pred[dup], keys)}")
    merged = expected.merge(pred, on=keys, how="outer", suffixes=suffixes, indicator=True)
    absent = merged[merged["_merge"] == "left_only"]
    if len(absent):
        raise InvalidPredictions(f"{len(absent)} expected {_rows(keys)} are missing, e.g. {_example(absent, keys)}")
    extra = merged[merged["_merge"] == "right_only"]
    if len(extra):
        raise InvalidPredictions(f"{len(extra)} unexpected {_rows(keys)}, e.g. {_example(extra, keys)}")
    return merged.drop(columns="_merge")
