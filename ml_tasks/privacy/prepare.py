"""Write the privacy task's data: scikit-learn's bundled digits (1797 8x8 images, 10 classes), offline.

Run by `benchmark.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/privacy>

Pixels are scaled from 0..16 to 0..1. One seeded split, stratified by class: train 60% (the private
training set the privacy guarantee is about), val 20%, test 20%. Row ids are a seeded relabelling.

    public/train.csv              id, p0..p63, label   (agent-visible; the driver trains on it)
    public/val_inputs.csv         id, p0..p63          (agent-visible)
    test_inputs/test_inputs.csv   id, p0..p63          (final test phase only)
    labels/{val,test}_labels.csv  id, label            (evaluator only)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

SPLIT_SEED = 20261125
FRACTIONS = (0.6, 0.2, 0.2)


def build(out: Path) -> None:
    from sklearn.datasets import load_digits

    digits = load_digits()
    pixels = pd.DataFrame(digits.data / 16.0, columns=[f"p{i}" for i in range(64)])
    frame = pd.concat([pd.DataFrame({"id": np.random.default_rng(SPLIT_SEED + 1).permutation(len(pixels))}),
                       pixels, pd.DataFrame({"label": digits.target.astype(int)})], axis=1)
    rng = np.random.default_rng(SPLIT_SEED)
    parts: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": []}
    for label in range(10):
        idx = rng.permutation(np.flatnonzero(digits.target == label))
        n_train, n_val = round(FRACTIONS[0] * len(idx)), round(FRACTIONS[1] * len(idx))
        parts["train"].append(idx[:n_train])
        parts["val"].append(idx[n_train:n_train + n_val])
        parts["test"].append(idx[n_train + n_val:])
    rows = {k: np.concatenate(v) for k, v in parts.items()}
    inputs = ["id", *pixels.columns]
    files = {"public/train.csv": frame.loc[rows["train"], [*inputs, "label"]],
             "public/val_inputs.csv": frame.loc[rows["val"], inputs],
             "test_inputs/test_inputs.csv": frame.loc[rows["test"], inputs],
             "labels/val_labels.csv": frame.loc[rows["val"], ["id", "label"]],
             "labels/test_labels.csv": frame.loc[rows["test"], ["id", "label"]]}
    for rel, table in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        table.sort_values("id").to_csv(path, index=False, float_format="%.4g", lineterminator="\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the task's workspace folder")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    build(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
