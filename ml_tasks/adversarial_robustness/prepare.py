"""Write the adversarial_robustness task's data into a workspace folder: sklearn's digits, split three ways.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/adversarial_robustness>

sklearn ships the 1797 8x8 digit images offline; pixels are integers 0..16 and are written as such,
so two runs write the same bytes. Layout written under --out:

    public/train.csv             id, p0..p63, label     (agent-visible: the training set)
    test_inputs/test_images.csv  id, p0..p63            (final test phase only; the driver does not need them)
    labels/val.csv               id, p0..p63, label     (evaluator only: the images it attacks on val)
    labels/test.csv              id, p0..p63, label     (evaluator only: the images it attacks on test)

The evaluator, not agent code, runs the attack, so it needs the images as well as the labels: both
live under labels/.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime.datasets import prepare_main, stratified_split, write_tables
from task_runtime.digits import PIXELS, digit_pixels

SPLIT_SEED = 20261124  # fixed: changing it changes the task (bump the version)
FRACTIONS = (0.6, 0.2, 0.2)  # train / val / test, stratified by class


def build(out: Path) -> None:
    images, labels = digit_pixels()
    ids = np.random.default_rng(SPLIT_SEED + 1).permutation(len(labels))  # ids carry no information
    frame = pd.DataFrame(images, columns=PIXELS)
    frame.insert(0, "id", ids)
    frame["label"] = labels
    parts = stratified_split(labels, FRACTIONS, np.random.default_rng(SPLIT_SEED))
    write_tables(out, {"public/train.csv": frame.iloc[parts["train"]],
                       "labels/val.csv": frame.iloc[parts["val"]],
                       "labels/test.csv": frame.iloc[parts["test"]],
                       "test_inputs/test_images.csv": frame.iloc[parts["test"]].drop(columns="label")})


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
