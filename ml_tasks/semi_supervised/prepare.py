"""Write the semi_supervised task's data: sklearn's digits with 1 label per class and 1068 unlabeled images.

Run by `benchmark.workspace.prepare` (never by agent code):

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

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

SEED = 20261127  # fixed: changing it changes the task (bump the version)
LABELS_PER_CLASS = 1
FRACTIONS = (0.6, 0.2, 0.2)  # training pool / val / test, stratified by class
PIXELS = [f"p{i}" for i in range(64)]


def build(out: Path) -> None:
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = np.asarray(digits.data).round().astype(np.int64)
    labels = np.asarray(digits.target, dtype=np.int64)
    rng = np.random.default_rng(SEED)
    parts: dict[str, list[np.ndarray]] = {"labeled": [], "unlabeled": [], "val": [], "test": []}
    for cls in range(10):
        idx = rng.permutation(np.flatnonzero(labels == cls))
        n_pool, n_val = round(FRACTIONS[0] * len(idx)), round(FRACTIONS[1] * len(idx))
        parts["labeled"].append(idx[:LABELS_PER_CLASS])
        parts["unlabeled"].append(idx[LABELS_PER_CLASS:n_pool])
        parts["val"].append(idx[n_pool:n_pool + n_val])
        parts["test"].append(idx[n_pool + n_val:])
    ids = rng.permutation(len(labels))  # ids carry no information
    frame = pd.DataFrame(images, columns=PIXELS)
    frame.insert(0, "id", ids)
    with_label = frame.assign(label=labels)
    rows = {name: np.concatenate(chunks) for name, chunks in parts.items()}
    files = {"public/train_labeled.csv": with_label.iloc[rows["labeled"]],
             "public/train_unlabeled.csv": frame.iloc[rows["unlabeled"]],
             "public/val_inputs.csv": frame.iloc[rows["val"]],
             "test_inputs/test_inputs.csv": frame.iloc[rows["test"]],
             "labels/val.csv": with_label.iloc[rows["val"]][["id", "label"]],
             "labels/test.csv": with_label.iloc[rows["test"]][["id", "label"]]}
    for rel, table in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        table.sort_values("id").to_csv(path, index=False, lineterminator="\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the task's workspace folder")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    build(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
