"""Writing what a driver or evaluator produces, atomically: a crash never leaves a half-written file
that could pass for a result."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

PREDICTIONS = "predictions.csv"


def write_atomic(path: Path, text: str) -> Path:
    """Write `text` to a temporary file beside `path`, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


def write_predictions(out: Path, frame: pd.DataFrame, name: str = PREDICTIONS) -> Path:
    """`frame` as `<out>/<name>` (CSV, no index, '\\n' line ends); returns the file's path."""
    return write_atomic(out / name, frame.to_csv(index=False, lineterminator="\n"))


def write_metrics(path: Path, metrics: dict[str, float]) -> Path:
    """The evaluator's result file: {"metrics": {...}}, sorted and indented."""
    return write_atomic(path, json.dumps({"metrics": metrics}, indent=2, sort_keys=True) + "\n")
