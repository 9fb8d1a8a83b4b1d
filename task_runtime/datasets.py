"""Preparing a task's data files: the prepare command line, seeded stratified splits, and tables that come
out byte for byte the same.

A task's data must not change between two runs of its prepare.py (its recorded baseline is measured on
it), so every split draws from a seeded generator in a fixed order and every table is written sorted by
id with one line ending.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable, Collection, Iterable, Optional, Sequence

import numpy as np
import pandas as pd


def stratified_split(labels: np.ndarray, fractions: tuple[float, float, float], rng: np.random.Generator, *,
                     classes: Iterable[int] | None = None, names: tuple[str, str, str] = ("train", "val", "test"),
                     shuffle: bool = True) -> dict[str, np.ndarray]:
    """Row indices of `labels` split three ways with the same class mix in each part.

    Per class (in `classes` order, default every class present): a random permutation of its rows, cut
    at round(fractions[0] * n) and round(fractions[1] * n) more; the rest is the last part. Each part is
    the classes' pieces concatenated in class order, then shuffled (unless `shuffle` is false, which
    keeps them grouped by class)."""
    parts: dict[str, list[np.ndarray]] = {name: [] for name in names}
    for cls in (np.unique(labels) if classes is None else classes):
        idx = rng.permutation(np.flatnonzero(labels == cls))
        n_first, n_second = round(fractions[0] * len(idx)), round(fractions[1] * len(idx))
        for name, piece in zip(names, (idx[:n_first], idx[n_first:n_first + n_second], idx[n_first + n_second:])):
            parts[name].append(piece)
    joined = {name: np.concatenate(pieces) for name, pieces in parts.items()}
    return {name: rng.permutation(idx) for name, idx in joined.items()} if shuffle else joined


def write_tables(out: Path, tables: dict[str, pd.DataFrame]) -> None:
    """Write each table to `out / <relative path>` as CSV, rows sorted by id, "\\n" line endings."""
    for rel, table in tables.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        table.sort_values("id").to_csv(path, index=False, lineterminator="\n")


def prepare_main(build: Callable[..., None], description: str, argv: Optional[Sequence[str]] = None,
                 scales: Optional[Collection[str]] = None) -> int:
    """The command line every prepare.py shares, `python prepare.py --out <workspace/task>`: makes the
    folder and calls `build(out)`, which writes the task's public/, test_inputs/ and labels/ under it.
    A task with `scales` (the names of its sizes: "lite", and "gpu" for its GPU-scale variant) also takes
    `--scale NAME` (default lite) and is called `build(out, scale)`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, required=True, help="the task's workspace folder")
    if scales:
        parser.add_argument("--scale", choices=list(scales), default="lite",
                            help="the data's size: lite (the CPU task, default) or a larger one")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if scales:
        build(args.out, args.scale)
    else:
        build(args.out)
    return 0


def write_npz_eval_splits(out: Path, x: np.ndarray, y: np.ndarray, ids: np.ndarray,
                          parts: dict[str, np.ndarray]) -> None:
    """The val and test parts of an array task, rows in id order: inputs (id, x) to
    public/val_inputs.npz and test_inputs/test_inputs.npz, labels (id, y) to labels/<phase>_labels.csv.
    `ids[i]` is row i's public id (a permutation, so ids reveal neither the split nor the source order)."""
    for phase, folder, name in (("val", "public", "val_inputs"), ("test", "test_inputs", "test_inputs")):
        idx = parts[phase][np.argsort(ids[parts[phase]], kind="stable")]
        (out / folder).mkdir(parents=True, exist_ok=True)
        (out / "labels").mkdir(parents=True, exist_ok=True)
        np.savez(out / folder / f"{name}.npz", id=ids[idx].astype(np.int64), x=x[idx])
        pd.DataFrame({"id": ids[idx], "y": y[idx]}).to_csv(out / "labels" / f"{phase}_labels.csv", index=False,
                                                          lineterminator="\n")
