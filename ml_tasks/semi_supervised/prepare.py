"""Write the semi_supervised task's data: sklearn's digits with 1 label per class and 1068 unlabeled images.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/semi_supervised>

sklearn ships the 1797 8x8 digit images offline; pixels are integers 0..16 and are written as such,
and all draws use fixed seeds, so two runs write the same bytes. Layout written under --out:

    public/train_labeled.csv      id, p0..p63, label   LABELS_PER_CLASS images of each digit
    public/train_unlabeled.csv    id, p0..p63          the rest of the training pool, labels withheld
    public/val_inputs.csv         id, p0..p63          validation images
    test_inputs/test_inputs.csv   id, p0..p63          hidden test images
    labels/val.csv, labels/test.csv   id, label        evaluator only
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime.datasets import prepare_main, stratified_split, write_tables
from task_runtime.digits import PIXELS, digit_pixels

SEED = 20261127  # fixed: changing it changes the task (bump the version)
LABELS_PER_CLASS = 1
FRACTIONS = (0.6, 0.2, 0.2)  # training pool / val / test, stratified by class


def build(out: Path) -> None:
    images, labels = digit_pixels()
    rng = np.random.default_rng(SEED)
    rows = stratified_split(labels, FRACTIONS, rng, names=("pool", "val", "test"), shuffle=False)
    pool = rows.pop("pool")  # grouped by class, each class's rows in random order: its first ones get labels
    rank = np.arange(len(pool)) - np.searchsorted(labels[pool], labels[pool])  # place within its class
    rows["labeled"], rows["unlabeled"] = pool[rank < LABELS_PER_CLASS], pool[rank >= LABELS_PER_CLASS]
    ids = rng.permutation(len(labels))  # ids carry no information
    frame = pd.DataFrame(images, columns=PIXELS)
    frame.insert(0, "id", ids)
    with_label = frame.assign(label=labels)
    files = {"public/train_labeled.csv": with_label.iloc[rows["labeled"]],
             "public/train_unlabeled.csv": frame.iloc[rows["unlabeled"]],
             "public/val_inputs.csv": frame.iloc[rows["val"]],
             "test_inputs/test_inputs.csv": frame.iloc[rows["test"]],
             "labels/val.csv": with_label.iloc[rows["val"]][["id", "label"]],
             "labels/test.csv": with_label.iloc[rows["test"]][["id", "label"]]}
    write_tables(out, files)


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
