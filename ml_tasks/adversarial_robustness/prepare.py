"""Write the adversarial_robustness task's data into a workspace folder: sklearn's digits, split three ways.

Run by `benchmark.workspace.prepare` (never by agent code):

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

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

SPLIT_SEED = 20261124  # fixed: changing it changes the task (bump the version)
FRACTIONS = (0.6, 0.2, 0.2)  # train / val / test, stratified by class
PIXELS = [f"p{i}" for i in range(64)]


def split(labels: np.ndarray) -> dict[str, np.ndarray]:
    """Seeded stratified split of row indices into train/val/test."""
    rng = np.random.default_rng(SPLIT_SEED)
    parts: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": []}
    for cls in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == cls))
        n_train, n_val = round(FRACTIONS[0] * len(idx)), round(FRACTIONS[1] * len(idx))
        parts["train"].append(idx[:n_train])
        parts["val"].append(idx[n_train:n_train + n_val])
        parts["test"].append(idx[n_train + n_val:])
    return {name: rng.permutation(np.concatenate(chunks)) for name, chunks in parts.items()}


def build(out: Path) -> None:
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = np.asarray(digits.data).round().astype(np.int64)  # 0..16
    labels = np.asarray(digits.target, dtype=np.int64)
    ids = np.random.default_rng(SPLIT_SEED + 1).permutation(len(labels))  # ids carry no information
    frame = pd.DataFrame(images, columns=PIXELS)
    frame.insert(0, "id", ids)
    frame["label"] = labels
    parts = split(labels)
    files = {"public/train.csv": frame.iloc[parts["train"]],
             "labels/val.csv": frame.iloc[parts["val"]],
             "labels/test.csv": frame.iloc[parts["test"]],
             "test_inputs/test_images.csv": frame.iloc[parts["test"]].drop(columns="label")}
    for rel, part in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        part.sort_values("id").to_csv(path, index=False, lineterminator="\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the task's workspace folder")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    build(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
