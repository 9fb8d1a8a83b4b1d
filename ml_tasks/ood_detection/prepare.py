"""Write the ood_detection task's data: digits 0-4 in distribution, unseen digits and natural-image
patches out of distribution, with different OOD sources for validation and the hidden test.

Run by `benchmark.workspace.prepare` (never by agent code):

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

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

SEED = 20261125  # fixed: changing it changes the task (bump the version)
ID_CLASSES = (0, 1, 2, 3, 4)
NEAR_OOD = {"val": (5, 6, 7), "test": (8, 9)}
FAR_OOD_IMAGE = {"val": 0, "test": 1}  # index into load_sample_images(): china.jpg, flower.jpg
ID_FRACTIONS = (0.6, 0.2, 0.2)  # train / val / test of the in-distribution digits, per class
PIXELS = [f"p{i}" for i in range(64)]


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
    from sklearn.datasets import load_digits, load_sample_images

    digits = load_digits()
    images = np.asarray(digits.data).round().astype(np.int64)
    labels = np.asarray(digits.target, dtype=np.int64)
    rng = np.random.default_rng(SEED)

    parts: dict[str, list[tuple[np.ndarray, np.ndarray, str]]] = {"train": [], "val": [], "test": []}
    for cls in ID_CLASSES:
        idx = rng.permutation(np.flatnonzero(labels == cls))
        n_train, n_val = round(ID_FRACTIONS[0] * len(idx)), round(ID_FRACTIONS[1] * len(idx))
        for name, chunk in (("train", idx[:n_train]), ("val", idx[n_train:n_train + n_val]),
                            ("test", idx[n_train + n_val:])):
            parts[name].append((images[chunk], labels[chunk], "id"))
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
        for rel, table in frames.items():
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
