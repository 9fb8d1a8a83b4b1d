"""Write the semi_supervised task's data: digits with 1 label per class and 1068 unlabeled images.

Run by `researchbench.benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/semi_supervised>

sklearn ships the 1797 8x8 digit images offline (pixels 0..16). Version 5 draws each of them once
through `render`, several interacting per-image nuisances, every one drawn independently of the digit
(the labeled images included):

  - geometry: an affine warp about the image's centre (rotation within +-MAX_ANGLE degrees, a horizontal
    shear within +-MAX_SHEAR, a size factor within 1 +- MAX_SCALE and an aspect factor within
    1 +- MAX_ASPECT), cut to the box of its ink and placed at a uniformly random position on a blank
    CANVAS x CANVAS canvas (a box larger than the canvas keeps its central rows or columns);
  - stroke: thinned (P_THIN), thickened (P_THICK) or left as drawn;
  - clutter: 0, 1 or 2 (CLUTTER_P) fragments of other, randomly chosen digits of any class (a 2..4 x 2..4
    crop with ink, turned by a random multiple of 90 degrees) pasted at random positions over the canvas;
  - photometry: a gain in [MIN_GAIN, 1], a uniform background level in [0, MAX_FOG], the polarity
    inverted with probability P_INVERT (bright background, dark strokes), Gaussian pixel noise of sd
    NOISE, rounded back to integers 0..16.

The agent-facing description says only that such hidden per-image nuisances exist, never which or their
ranges. `render` also returns each image's digit layer (the warped, stroke-changed digit before clutter
and photometry) and its draw, which benchmarks/oracle_semi_supervised.py replays (the generator-knowing
1.0); they are never written. All draws use fixed seeds, so two runs write the same bytes. Layout written
under --out:

    public/train_labeled.csv      id, p0..p143, label   LABELS_PER_CLASS images of each digit
    public/train_unlabeled.csv    id, p0..p143          the rest of the training pool, labels withheld
    public/val_inputs.csv         id, p0..p143          validation images
    test_inputs/test_inputs.csv   id, p0..p143          hidden test images
    labels/val.csv, labels/test.csv   id, label         evaluator only
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime.datasets import prepare_main, stratified_split, write_tables
from task_runtime.digits import PIXEL_MAX, digit_pixels

SEED = 20261127  # fixed: changing it changes the task (bump the version)
RENDER_SEED = 20260500  # the nuisance draws (version 5.0.0); fixed likewise
LABELS_PER_CLASS = 1
FRACTIONS = (0.6, 0.2, 0.2)  # training pool / val / test, stratified by class
CANVAS = 12  # the written images are CANVAS x CANVAS
MAX_ANGLE = 25.0  # degrees, either way
MAX_SHEAR = 0.3
MAX_SCALE = 0.2
MAX_ASPECT = 0.15
P_THIN, P_THICK = 0.25, 0.25
CLUTTER_P = (0.4, 0.4, 0.2)  # probability of 0, 1, 2 clutter fragments
MIN_GAIN = 0.5
MAX_FOG = 0.2
P_INVERT = 0.3
NOISE = 0.04  # pixel noise sd, in units of the full range
PIXELS = [f"p{i}" for i in range(CANVAS * CANVAS)]


def warp(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The digit (8, 8) in [0, 1] under a random affine warp and stroke change, on a (20, 20) float work grid."""
    from scipy import ndimage

    angle = np.deg2rad(rng.uniform(-MAX_ANGLE, MAX_ANGLE))
    shear = rng.uniform(-MAX_SHEAR, MAX_SHEAR)
    size = 1.0 + rng.uniform(-MAX_SCALE, MAX_SCALE)
    aspect = 1.0 + rng.uniform(-MAX_ASPECT, MAX_ASPECT)
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    forward = rotation @ np.array([[1.0, 0.0], [shear, 1.0]]) @ np.diag([size * aspect, size / aspect])
    inverse = np.linalg.inv(forward)
    work = np.zeros((20, 20))
    work[6:14, 6:14] = image
    centre = np.array([9.5, 9.5])
    layer = np.clip(ndimage.affine_transform(work, inverse, offset=centre - inverse @ centre, order=1), 0, 1)
    stroke = rng.uniform()
    if stroke < P_THIN:
        layer = np.clip((layer - 0.4) / 0.6, 0, 1)
    elif stroke < P_THIN + P_THICK:
        layer = np.maximum(layer, 0.8 * ndimage.maximum_filter(layer, size=2))
    return layer


def place(layer: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The ink box of a work-grid layer pasted at a random position of a blank (CANVAS, CANVAS) canvas."""
    rows, cols = np.nonzero(layer > 0.5 / PIXEL_MAX)
    box = layer[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
    top, left = max(0, (box.shape[0] - CANVAS) // 2), max(0, (box.shape[1] - CANVAS) // 2)
    box = box[top:top + CANVAS, left:left + CANVAS]
    dy, dx = rng.integers(0, CANVAS - box.shape[0] + 1), rng.integers(0, CANVAS - box.shape[1] + 1)
    canvas = np.zeros((CANVAS, CANVAS))
    canvas[dy:dy + box.shape[0], dx:dx + box.shape[1]] = box
    return canvas


def clutter(sources: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """0, 1 or 2 fragments of randomly chosen digits (any class) on a blank canvas."""
    canvas = np.zeros((CANVAS, CANVAS))
    for _ in range(rng.choice(len(CLUTTER_P), p=CLUTTER_P)):
        source = sources[rng.integers(len(sources))]
        while True:
            h, w = rng.integers(2, 5, size=2)
            r, c = rng.integers(0, 8 - h + 1), rng.integers(0, 8 - w + 1)
            piece = source[r:r + h, c:c + w]
            if piece.sum() >= 1.5:
                break
        piece = np.rot90(piece, rng.integers(4))
        r, c = rng.integers(0, CANVAS - piece.shape[0] + 1), rng.integers(0, CANVAS - piece.shape[1] + 1)
        canvas[r:r + piece.shape[0], c:c + piece.shape[1]] = np.maximum(
            canvas[r:r + piece.shape[0], c:c + piece.shape[1]], piece)
    return canvas


def render(images: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """Every (n, 64) digit (pixels 0..16) drawn once through the nuisances, in order: the written pixels
    (n, CANVAS * CANVAS) integers 0..16, the digit layers (n, CANVAS * CANVAS) in [0, 1] and each draw's
    photometry (gain, fog, inverted)."""
    sources = images.reshape(-1, 8, 8) / PIXEL_MAX
    pixels, layers, draws = [], [], []
    for image in sources:
        digit = place(warp(image, rng), rng)
        ink = np.maximum(digit, clutter(sources, rng))
        gain, fog, inverted = rng.uniform(MIN_GAIN, 1.0), rng.uniform(0.0, MAX_FOG), bool(rng.uniform() < P_INVERT)
        value = fog + (1.0 - fog) * gain * ink
        value = (1.0 - value if inverted else value) + rng.normal(0.0, NOISE, size=value.shape)
        pixels.append(np.round(np.clip(value, 0.0, 1.0) * PIXEL_MAX).astype(np.int64).ravel())
        layers.append(digit.ravel())
        draws.append({"gain": gain, "fog": fog, "inverted": inverted})
    return np.stack(pixels), np.stack(layers), draws


def build(out: Path) -> None:
    images, labels = digit_pixels()
    rng = np.random.default_rng(SEED)
    rows = stratified_split(labels, FRACTIONS, rng, names=("pool", "val", "test"), shuffle=False)
    pool = rows.pop("pool")  # grouped by class, each class's rows in random order: its first ones get labels
    rank = np.arange(len(pool)) - np.searchsorted(labels[pool], labels[pool])  # place within its class
    rows["labeled"], rows["unlabeled"] = pool[rank < LABELS_PER_CLASS], pool[rank >= LABELS_PER_CLASS]
    ids = rng.permutation(len(labels))  # ids carry no information
    pixels, _, _ = render(images, np.random.default_rng(RENDER_SEED))
    frame = pd.DataFrame(pixels, columns=PIXELS)
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
