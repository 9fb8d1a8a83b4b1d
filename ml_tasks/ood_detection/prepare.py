"""Write the ood_detection task's data: digits 0-4 in distribution, unseen digits and natural-image
patches out of distribution, with different OOD sources for validation and the hidden test.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/ood_detection>

Everything comes from data sklearn ships offline (`load_digits`, `load_sample_images`) and fixed
seeds, so two runs write the same bytes. Pixels are integers 0..16 (the digits' scale). Layout:

    public/train.csv              id, p0..p63, label    in-distribution training images (digits 0-4)
    public/val_inputs.csv         id, p0..p63           validation images, ID and OOD shuffled together
    test_inputs/test_inputs.csv   id, p0..p63           hidden test images, same format
    labels/val.csv, labels/test.csv   id, ood (0/1), kind (id | near | far)   evaluator only

Sources of each evaluation set (disjoint images; ids are a seeded relabelling):
    val:  ID = held-out digits 0-4; near-OOD = digits 5, 6, 7; far-OOD = 8x8 patches of china.jpg
    test: ID = other held-out digits 0-4; near-OOD = digits 8, 9; far-OOD = 8x8 patches of flower.jpg
Each far-OOD patch carries the pixel values of a random digit image (any class), rearranged in the
patch's own brightness order, so pixel statistics alone cannot tell it from a digit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime.datasets import prepare_main, stratified_split, write_tables
from task_runtime.digits import PIXELS, digit_pixels

SEED = 20261125  # fixed: changing it changes the task (bump the version)
ID_CLASSES = (0, 1, 2, 3, 4)
NEAR_OOD = {"val": (5, 6, 7), "test": (8, 9)}
FAR_OOD_IMAGE = {"val": 0, "test": 1}  # index into load_sample_images(): china.jpg, flower.jpg
ID_FRACTIONS = (0.6, 0.2, 0.2)  # train / val / test of the in-distribution digits, per class


def image_patches(image: np.ndarray, count: int, rng: np.random.Generator, digits: np.ndarray) -> np.ndarray:
    """`count` random 32x32 grey crops, block-averaged to 8x8, each given the pixel values of a random digit.

    The patch keeps its own spatial order (its brightest pixel gets the digit's largest value, and so on),
    so its histogram, mean, norm and share of zero pixels are those of a real digit: only shape tells it
    apart. (Stretching the patch to 0..16 instead left it with few zero pixels, which alone flagged it.)
    """
    grey = image.astype(np.float64).mean(axis=2)
    out = np.empty((count, 64), dtype=np.int64)
    for k in range(count):
        r = rng.integers(0, grey.shape[0] - 32)
        c = rng.integers(0, grey.shape[1] - 32)
        small = grey[r:r + 32, c:c + 32].reshape(8, 4, 8, 4).mean(axis=(1, 3)).ravel()
        values = np.sort(digits[rng.integers(len(digits))])
        out[k, np.argsort(small + 1e-9 * rng.random(64), kind="stable")] = values  # random tie-breaks
    return out


def build(out: Path) -> None:
    from sklearn.datasets import load_sample_images

    images, labels = digit_pixels()
    rng = np.random.default_rng(SEED)
    split = stratified_split(labels, ID_FRACTIONS, rng, classes=ID_CLASSES, shuffle=False)
    parts = {name: [(images[idx], labels[idx], "id")] for name, idx in split.items()}
    samples = load_sample_images().images
    for phase in ("val", "test"):
        n_id = sum(len(x) for x, _, _ in parts[phase])
        near = np.concatenate([rng.permutation(np.flatnonzero(labels == c)) for c in NEAR_OOD[phase]])
        near = rng.permutation(near)[:n_id]
        parts[phase].append((images[near], np.full(len(near), -1), "near"))
        far = image_patches(samples[FAR_OOD_IMAGE[phase]], n_id, rng, images)
        parts[phase].append((far, np.full(n_id, -1), "far"))

    total = sum(len(x) for chunks in parts.values() for x, _, _ in chunks)
    ids = iter(rng.permutation(total))
    for phase, chunks in parts.items():
        x = np.concatenate([c[0] for c in chunks])
        frame = pd.DataFrame(x, columns=PIXELS)
        frame.insert(0, "id", [next(ids) for _ in range(len(frame))])
        kinds = np.concatenate([np.full(len(c[0]), c[2]) for c in chunks])
        if phase == "train":
            frame["label"] = np.concatenate([c[1] for c in chunks])
            frames = {"public/train.csv": frame}
        else:
            key = pd.DataFrame({"id": frame["id"], "ood": (kinds != "id").astype(int), "kind": kinds})
            inputs = "public/val_inputs.csv" if phase == "val" else "test_inputs/test_inputs.csv"
            frames = {inputs: frame, f"labels/{phase}.csv": key}
        write_tables(out, frames)


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
