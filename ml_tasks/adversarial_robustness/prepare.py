"""Write the adversarial_robustness task's data into a workspace folder: sklearn's digits, redrawn by a generator.

Run by `researchbench.benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/adversarial_robustness>

sklearn ships the 1797 8x8 digit images offline (pixels 0..16). Version 4 draws each of them once through
`draw`: the digit's box of nonzero pixels pasted at a uniformly random position on a blank CANVAS x CANVAS
canvas (pixels stay integers 0..16). The nuisance carries no information about the digit, but a classifier
must read every digit at every position, and a robust one must keep its margin there too. The CANVAS * CANVAS values are written in a fixed, undisclosed column
order (x0..x99), drawn once from SEED, so the canvas's layout is not given away. All draws use fixed
seeds, so two runs write the same bytes. The split (stratified 0.6 / 0.2 / 0.2 by digit) is version 3's:
its validation and test digits are the same, and of its 1078 training digits a stratified half, TRAIN_SHARE
(538), make the training set; the other half is written nowhere (the generator's digits that no one is
shown). Layout written under --out:

    public/train.csv             id, x0..x99, label     (agent-visible: the training set)
    test_inputs/test_images.csv  id, x0..x99            (final test phase only; the driver does not need them)
    labels/val.csv               id, x0..x99, label     (evaluator only: the images it attacks on val)
    labels/test.csv              id, x0..x99, label     (evaluator only: the images it attacks on test)

The evaluator, not agent code, runs the attack, so it needs the images as well as the labels: both
live under labels/. benchmarks/oracle_adversarial_robustness.py replays `generate` to know what no file
shows (the column order and the pool's digits) and trains on fresh draws of the generator.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime.datasets import prepare_main, stratified_split, write_tables
from task_runtime.digits import digit_pixels

SPLIT_SEED = 20261124  # fixed: changing it changes the task (bump the version)
SEED = 20261128  # the nuisance draws and the column order (new in version 4.0.0); fixed likewise
FRACTIONS = (0.6, 0.2, 0.2)  # pool / val / test, stratified by class
TRAIN_SHARE = 0.5  # of each class's pool digits, the share drawn into the training set
CANVAS = 10  # the written images are CANVAS x CANVAS values
FEATURES = [f"x{i}" for i in range(CANVAS * CANVAS)]


def draw(images: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw of the nuisance for each (n, 64) digit (pixels 0..16), in order: its nonzero box pasted at a
    random position of the canvas. Integer (n, CANVAS * CANVAS) pixels, row by row."""
    out = np.zeros((len(images), CANVAS, CANVAS), dtype=np.int64)
    for i, image in enumerate(images):
        image = image.reshape(8, 8)
        rows, cols = np.nonzero(image)
        box = image[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
        dy, dx = rng.integers(0, CANVAS - box.shape[0] + 1), rng.integers(0, CANVAS - box.shape[1] + 1)
        out[i, dy:dy + box.shape[0], dx:dx + box.shape[1]] = box
    return out.reshape(len(images), CANVAS * CANVAS)


def generate() -> tuple[dict[str, pd.DataFrame], np.ndarray, dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """(every phase's table: id, FEATURES, label; the column order; the rows of the digits in "pool", "train",
    "val" and "test"; the 1797 digits' pixels and labels). `build` writes the tables; the oracle replays this."""
    images, labels = digit_pixels()
    ids = np.random.default_rng(SPLIT_SEED + 1).permutation(len(labels))  # ids carry no information
    parts = stratified_split(labels, FRACTIONS, np.random.default_rng(SPLIT_SEED), names=("pool", "val", "test"))
    rng = np.random.default_rng(SEED)
    within = stratified_split(labels[parts["pool"]], (TRAIN_SHARE, 1 - TRAIN_SHARE, 0.0), rng)  # shuffled
    parts["train"] = parts["pool"][within["train"]]
    order = rng.permutation(CANVAS * CANVAS)  # the undisclosed column order: x_j is canvas value order[j]
    drawn = draw(images, rng)[:, order]
    frame = pd.DataFrame(drawn, columns=FEATURES)
    frame.insert(0, "id", ids)
    frame["label"] = labels
    tables = {phase: frame.iloc[parts[phase]].reset_index(drop=True) for phase in ("train", "val", "test")}
    return tables, order, parts, images, labels


def build(out: Path) -> None:
    tables, _, _, _, _ = generate()
    write_tables(out, {"public/train.csv": tables["train"],
                       "labels/val.csv": tables["val"],
                       "labels/test.csv": tables["test"],
                       "test_inputs/test_images.csv": tables["test"].drop(columns="label")})


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
