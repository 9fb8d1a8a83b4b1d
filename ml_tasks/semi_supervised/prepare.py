"""Write the semi_supervised task's data: digits with 1 label per class and 1068 unlabeled images.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/semi_supervised>

sklearn ships the 1797 8x8 digit images offline (pixels 0..16). Version 4 draws each of them once
through `distort`: rotated by a random angle in +-MAX_ANGLE degrees and scaled by a random factor in
1 +- MAX_SCALE (bilinear, about the image's centre), cut to the box of its nonzero pixels (trimmed to its
central CANVAS rows or columns where it is larger: 210 of the 1797 draws lose an edge row or column) and
pasted at a uniformly random position on a blank CANVAS x CANVAS canvas, pixels rounded back to integers
0..16 and written as such. The nuisance (position, angle, size) carries no information about the digit,
but it moves raw-pixel neighbourhoods away from the class, which graph methods on raw pixels rely on; a
classifier trained on every label still reads the digit (benchmarks/oracle_semi_supervised.py). All draws
use fixed seeds, so two runs write the same bytes. Layout written under --out:

    public/train_labeled.csv      id, p0..p99, label   LABELS_PER_CLASS images of each digit
    public/train_unlabeled.csv    id, p0..p99          the rest of the training pool, labels withheld
    public/val_inputs.csv         id, p0..p99          validation images
    test_inputs/test_inputs.csv   id, p0..p99          hidden test images
    labels/val.csv, labels/test.csv   id, label        evaluator only
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime.datasets import prepare_main, stratified_split, write_tables
from task_runtime.digits import PIXEL_MAX, digit_pixels

SEED = 20261127  # fixed: changing it changes the task (bump the version)
DISTORT_SEED = 20260400  # the nuisance draws (new in version 4.0.0); fixed likewise
LABELS_PER_CLASS = 1
FRACTIONS = (0.6, 0.2, 0.2)  # training pool / val / test, stratified by class
CANVAS = 10  # the written images are CANVAS x CANVAS
MAX_ANGLE = 20.0  # degrees, either way
MAX_SCALE = 0.2  # size factor in [1 - MAX_SCALE, 1 + MAX_SCALE]
PIXELS = [f"p{i}" for i in range(CANVAS * CANVAS)]


def distort(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw of the nuisance for one (8, 8) digit (pixels 0..16): rotated and scaled about its centre,
    cut to its nonzero box and pasted at a random position of the canvas. Integer (CANVAS, CANVAS) pixels."""
    from scipy import ndimage

    angle = np.deg2rad(rng.uniform(-MAX_ANGLE, MAX_ANGLE))
    scale = 1.0 + rng.uniform(-MAX_SCALE, MAX_SCALE)
    work = np.zeros((16, 16))  # room for the largest rotated, enlarged digit
    work[4:12, 4:12] = image
    inverse = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]]) / scale
    centre = np.array([7.5, 7.5])
    warped = np.clip(np.round(ndimage.affine_transform(work, inverse, offset=centre - inverse @ centre, order=1)),
                     0, PIXEL_MAX)
    rows, cols = np.nonzero(warped)
    box = warped[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
    top, left = (max(0, (box.shape[0] - CANVAS) // 2), max(0, (box.shape[1] - CANVAS) // 2))
    box = box[top:top + CANVAS, left:left + CANVAS]  # a box over 10 (210 of the 1797 draws) keeps its central 10
    dy, dx = rng.integers(0, CANVAS - box.shape[0] + 1), rng.integers(0, CANVAS - box.shape[1] + 1)
    canvas = np.zeros((CANVAS, CANVAS), dtype=np.int64)
    canvas[dy:dy + box.shape[0], dx:dx + box.shape[1]] = box.astype(np.int64)
    return canvas


def canvas_pixels(images: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Every (n, 64) digit drawn once through `distort`, in order: (n, CANVAS * CANVAS) integers 0..16."""
    return np.stack([distort(image.reshape(8, 8), rng).ravel() for image in images])


def build(out: Path) -> None:
    images, labels = digit_pixels()
    rng = np.random.default_rng(SEED)
    rows = stratified_split(labels, FRACTIONS, rng, names=("pool", "val", "test"), shuffle=False)
    pool = rows.pop("pool")  # grouped by class, each class's rows in random order: its first ones get labels
    rank = np.arange(len(pool)) - np.searchsorted(labels[pool], labels[pool])  # place within its class
    rows["labeled"], rows["unlabeled"] = pool[rank < LABELS_PER_CLASS], pool[rank >= LABELS_PER_CLASS]
    ids = rng.permutation(len(labels))  # ids carry no information
    frame = pd.DataFrame(canvas_pixels(images, np.random.default_rng(DISTORT_SEED)), columns=PIXELS)
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
