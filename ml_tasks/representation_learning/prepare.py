"""Write the representation_learning task's data: sklearn's digits drawn with hidden nuisances on a 16x16 canvas.

Run by `researchbench.benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/representation_learning>

Version 4 draws every one of the 1797 8x8 digits once through `draw` (`generate` replays it; the draws
no file shows come back with it, for benchmarks/oracle_representation_learning.py). Per image, all
independent of the digit:
  - the digit's shape: scaled by a factor in [SCALE_LO, SCALE_HI] and rotated by up to MAX_ANGLE degrees
    about its centre (bilinear), its strokes thickened or thinned (pixels raised to a power
    exp(U(-STROKE, STROKE))), its brightness multiplied by a gain in [GAIN_LO, 1];
  - its place: the box of its nonzero pixels pasted at a uniformly random position of the canvas;
  - clutter: 0..MAX_CLUTTER fragments (2..4 pixels a side) cut from other, randomly chosen digits, each
    at its own brightness and random place (they may overlap the digit), and with probability LINE one
    full-length row or column stroke; the layers are combined by their pixelwise maximum;
  - an uneven background that dominates the pixels' variance: a level (up to 0.15) plus two smooth
    random cosine waves (random frequency, direction and phase) of a random overall amplitude up to
    BACKGROUND, showing through where the strokes are not at full brightness (layer + (1 - layer) * field);
  - Gaussian pixel noise of a random sd in [NOISE_LO, NOISE_HI]; the sum is clipped to [0, 1].
The clean digit is what a label-free encoder must recover; none of the nuisances says anything about
which digit it is. All draws use fixed seeds, so two runs write the same bytes (uncompressed .npz with
fixed timestamps). Layout under --out:

    public/unlabeled.npz              x (1000, 256) float32              pretraining data, no labels
    public/probe_train_inputs.npz     id, x (200, 256)                   the probe's training inputs (labels hidden)
    public/val_inputs.npz             id, x (300, 256)                   validation probe inputs
    test_inputs/test_inputs.npz       id, x (297, 256)                   test probe inputs (final test phase only)
    labels/probe_train_labels.csv     id, y                              evaluator only
    labels/val_labels.csv, labels/test_labels.csv   id, y                evaluator only

Version 3 (12x12, an integer offset and light noise only) was solved by centring each image on its
centre of mass; version 4's clutter, background and shape changes defeat that.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime.datasets import prepare_main, write_tables
from task_runtime.digits import digit_images

SEED = 20261126  # the split; fixed: changing it changes the task (bump the version)
DRAW_SEED = 20270415  # the nuisance draws (new in version 4.0.0); fixed likewise
CANVAS = 16
SIZES = {"unlabeled": 1000, "probe_train": 200, "val": 300}  # the rest (297) is the test probe set
SCALE_LO, SCALE_HI, MAX_ANGLE = 0.9, 1.15, 12.0
STROKE, GAIN_LO = 0.5, 0.55
MAX_CLUTTER, LINE = 2, 0.25
BACKGROUND = 0.35
NOISE_LO, NOISE_HI = 0.02, 0.08


def warp(image: np.ndarray, scale: float, angle: float, stroke: float) -> np.ndarray:
    """The (8, 8) digit scaled and rotated about its centre on a 14x14 work area, its pixels raised to
    the power `stroke`, cut to the box of its pixels above 0.02."""
    from scipy import ndimage

    work = np.zeros((14, 14))
    work[3:11, 3:11] = image
    a = np.deg2rad(angle)
    inverse = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]) / scale
    centre = np.array([6.5, 6.5])
    out = np.clip(ndimage.affine_transform(work, inverse, offset=centre - inverse @ centre, order=1), 0, 1)
    out = out ** stroke
    rows, cols = np.nonzero(out > 0.02)
    return out[rows.min():rows.max() + 1, cols.min():cols.max() + 1]


def background(rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    yy, xx = np.mgrid[0:CANVAS, 0:CANVAS] / CANVAS
    amplitude = rng.uniform(0.0, BACKGROUND)
    field = np.full((CANVAS, CANVAS), rng.uniform(0.0, 0.15))
    weights = rng.dirichlet([1.0, 1.0])
    waves = []
    for w in weights:
        freq, direction, phase = rng.uniform(0.3, 1.5), rng.uniform(0, 2 * np.pi), rng.uniform(0, 2 * np.pi)
        field = field + amplitude * w * 0.5 * (1 + np.cos(2 * np.pi * freq * (np.cos(direction) * xx
                                                                                + np.sin(direction) * yy) + phase))
        waves.append((freq, direction, phase))
    return field, {"amplitude": amplitude, "waves": waves}


def draw(index: int, images: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    """One image (CANVAS, CANVAS) for digit `index`, and its hidden draws."""
    scale, angle = rng.uniform(SCALE_LO, SCALE_HI), rng.uniform(-MAX_ANGLE, MAX_ANGLE)
    stroke, gain = float(np.exp(rng.uniform(-STROKE, STROKE))), rng.uniform(GAIN_LO, 1.0)
    box = warp(images[index], scale, angle, stroke)[:CANVAS, :CANVAS] * gain
    dy, dx = rng.integers(0, CANVAS - box.shape[0] + 1), rng.integers(0, CANVAS - box.shape[1] + 1)
    layer = np.zeros((CANVAS, CANVAS))
    layer[dy:dy + box.shape[0], dx:dx + box.shape[1]] = box
    fragments = []
    for _ in range(rng.integers(0, MAX_CLUTTER + 1)):
        other = rng.integers(len(images))
        h, w = rng.integers(2, 5, size=2)
        top, left = rng.integers(0, 8 - h + 1), rng.integers(0, 8 - w + 1)
        y0, x0 = rng.integers(0, CANVAS - h + 1), rng.integers(0, CANVAS - w + 1)
        piece = images[other][top:top + h, left:left + w] * rng.uniform(GAIN_LO, 1.0)
        layer[y0:y0 + h, x0:x0 + w] = np.maximum(layer[y0:y0 + h, x0:x0 + w], piece)
        fragments.append((int(other), int(y0), int(x0), int(h), int(w)))
    line = None
    if rng.random() < LINE:
        vertical, where, level = bool(rng.random() < 0.5), int(rng.integers(CANVAS)), rng.uniform(0.3, 0.9)
        if vertical:
            layer[:, where] = np.maximum(layer[:, where], level)
        else:
            layer[where, :] = np.maximum(layer[where, :], level)
        line = (vertical, where, level)
    field, bg = background(rng)
    noise = rng.uniform(NOISE_LO, NOISE_HI)
    image = np.clip(layer + (1.0 - layer) * field + rng.normal(0.0, noise, size=layer.shape), 0.0, 1.0)
    return image, {"scale": scale, "angle": angle, "stroke": stroke, "gain": gain, "offset": (int(dy), int(dx)),
                   "box": box.shape, "fragments": fragments, "line": line, "background": bg, "noise": noise}


def stratified_order(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A permutation in which every prefix is close to class-balanced (round-robin over shuffled classes)."""
    queues = [list(rng.permutation(np.flatnonzero(y == c))) for c in range(10)]
    order = []
    while any(queues):
        for q in queues:
            if q:
                order.append(q.pop())
    return np.asarray(order)


def generate() -> dict:
    """Every image with its digit and hidden draws, and the split: what `build` writes and what the
    oracle replays. Keys: x (1797, 256) float32, y, draws (list of dicts), parts (name -> row indices),
    ids (row -> id)."""
    images, y = digit_images()
    images = images.astype(np.float64)
    rng = np.random.default_rng(SEED)
    order = stratified_order(y, rng)
    ids = rng.permutation(len(y))
    parts, start = {}, 0
    for name, size in SIZES.items():
        parts[name] = order[start:start + size]
        start += size
    parts["test"] = order[start:]
    draw_rng = np.random.default_rng(DRAW_SEED)
    drawn = [draw(i, images, draw_rng) for i in range(len(y))]
    x = np.stack([image.ravel() for image, _ in drawn]).astype(np.float32)
    return {"x": x, "y": y, "draws": [d for _, d in drawn], "parts": parts, "ids": ids}


def build(out: Path) -> None:
    data = generate()
    x, y, parts, ids = data["x"], data["y"], data["parts"], data["ids"]
    for folder in ("public", "test_inputs", "labels"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    np.savez(out / "public" / "unlabeled.npz", x=x[np.sort(parts["unlabeled"])])
    for name, folder, file in (("probe_train", "public", "probe_train_inputs"), ("val", "public", "val_inputs"),
                               ("test", "test_inputs", "test_inputs")):
        idx = parts[name][np.argsort(ids[parts[name]], kind="stable")]
        np.savez(out / folder / f"{file}.npz", id=ids[idx].astype(np.int64), x=x[idx])
        label_file = "probe_train_labels" if name == "probe_train" else f"{name}_labels"
        write_tables(out, {f"labels/{label_file}.csv": pd.DataFrame({"id": ids[idx], "y": y[idx]})})


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
