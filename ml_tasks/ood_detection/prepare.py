"""Write the ood_detection task's data: digits 0-4 in distribution, unseen digits and natural-image
patches out of distribution, with different OOD sources for validation and the hidden test, every image to
score seen through a noisy, misaligned scanner.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/ood_detection>

Everything comes from data sklearn ships offline (`load_digits`, `load_sample_images`) and fixed
seeds, so two runs write the same bytes. Pixels are integers 0..16 (the digits' scale). Layout:

    public/train.csv              id, p0..p63, label    in-distribution training images (digits 0-4), clean
    public/val_inputs.csv         id, p0..p63           validation images, ID and OOD shuffled together
    test_inputs/test_inputs.csv   id, p0..p63           hidden test images, same format
    labels/val.csv, labels/test.csv   id, ood (0/1), kind (id | near | far)   evaluator only

Sources of each evaluation set (disjoint images; ids are a seeded relabelling):
    val:  ID = held-out digits 0-4; near-OOD = digits 5, 9; far-OOD = 8x8 patches of china.jpg
    test: ID = other held-out digits 0-4; near-OOD = digits 7, 8; far-OOD = 8x8 patches of flower.jpg
Each far-OOD patch carries the pixel values of a random digit image (any class), rearranged in the
patch's own brightness order, so pixel statistics alone cannot tell it from a digit.
Every validation and test image, in-distribution or not, then passes through the same scanner:
shifted by up to one pixel in each direction (`shifted`: uniform over the 9 offsets, blank pixels
shifted in; a patch is shifted before it gets its digit values), plus Gaussian noise of sd SCAN_NOISE
pixel levels, rounded and clipped to 0..16 (`noisy`). The training images
are not scanned: the nuisance is a covariate shift that changes no image's class, so a detector must
flag unseen content, not the scanner (full-spectrum OOD detection, Yang et al. 2022).
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
NEAR_OOD = {"val": (5, 9), "test": (7, 8)}
FAR_OOD_IMAGE = {"val": 0, "test": 1}  # index into load_sample_images(): china.jpg, flower.jpg
ID_FRACTIONS = (0.6, 0.2, 0.2)  # train / val / test of the in-distribution digits, per class
SCAN_SHIFT = 1  # largest shift of a scanned image, pixels, each direction
SCAN_NOISE = 4.0  # sd of the scanner's Gaussian pixel noise, in pixel levels (0..16)


def image_patches(image: np.ndarray, count: int, rng: np.random.Generator, digits: np.ndarray) -> np.ndarray:
    """`count` random 32x32 grey crops, block-averaged to 8x8, each given the pixel values of a random
    digit as the scanner shifts it (`shifted`).

    The patch keeps its own spatial order (its brightest pixel gets the digit's largest value, and so on),
    so its histogram, mean, norm and share of zero pixels are those of a real scanned digit: only shape
    tells it apart. (Stretching the patch to 0..16 instead left it with few zero pixels, which alone
    flagged it.) The crop is shifted too before it gets the values, so its darkest values fill a blank
    line at the edge, as in a shifted digit. (Shifting the finished patch cost it more brightness than a
    digit, whose edges are mostly blank; giving it an unshifted digit's values left it brighter than a
    shifted digit: either alone flagged it.)
    """
    grey = image.astype(np.float64).mean(axis=2)
    out = np.empty((count, 64), dtype=np.int64)
    for k in range(count):
        r = rng.integers(0, grey.shape[0] - 32)
        c = rng.integers(0, grey.shape[1] - 32)
        small = grey[r:r + 32, c:c + 32].reshape(8, 4, 8, 4).mean(axis=(1, 3)).ravel()
        small = shifted(small[None, :] + 1.0, rng)[0]  # + 1: the blank line shifted in is the darkest
        values = np.sort(shifted(digits[rng.integers(len(digits))][None, :], rng)[0])
        out[k, np.argsort(small + 1e-9 * rng.random(64), kind="stable")] = values  # random tie-breaks
    return out


def shifted(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each (n, 64) image shifted by a random offset in -SCAN_SHIFT..SCAN_SHIFT per axis (uniform over the
    offsets): pixels shifted out are lost, blank (0) ones shifted in."""
    padded = np.pad(x.reshape(-1, 8, 8).astype(np.float64), ((0, 0), (SCAN_SHIFT, SCAN_SHIFT), (SCAN_SHIFT, SCAN_SHIFT)))
    offsets = rng.integers(0, 2 * SCAN_SHIFT + 1, size=(len(x), 2))
    return np.stack([padded[i, dy:dy + 8, dx:dx + 8] for i, (dy, dx) in enumerate(offsets)]).reshape(len(x), 64)


def noisy(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each pixel plus N(0, SCAN_NOISE^2), rounded and clipped to 0..16 (integers)."""
    return np.clip(np.rint(x + rng.normal(0.0, SCAN_NOISE, size=x.shape)), 0, 16).astype(np.int64)


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
        # the scanner: digits are shifted here, patches were shifted inside image_patches; all get noise
        parts[phase] = [(noisy(x if kind == "far" else shifted(x, rng), rng), y, kind) for x, y, kind in parts[phase]]

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
