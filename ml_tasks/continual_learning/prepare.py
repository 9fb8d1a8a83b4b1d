"""Write the continual_learning task's data: sklearn's digits as five class-incremental splits, each split
recorded under its own hidden conditions.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/continual_learning>

Construction (all draws from fixed seeds, so two runs write the same bytes):
  - the 1797 digits are split per class 60/20/20 into train, validation and hidden test; the training
    images of classes 2k and 2k+1 form split k (k = 0..4), as in split-MNIST;
  - every split k gets one CONDITION, drawn once and written nowhere: where on a CANVAS x CANVAS canvas its
    digits sit (a centre offset; each image adds a jitter of at most JITTER pixels each way), how its
    strokes are drawn (a gain and a contrast exponent: stroke = gain * pixel ** gamma) and what lies behind
    them (a background: a level plus an oriented grating of its own period, angle, phase and amplitude);
  - an image is rendered under a condition as background and strokes screened together,
    1 - (1 - background) * (1 - stroke), plus Gaussian pixel noise of sd NOISE, clipped to [0, 1];
  - a training image is rendered under its split's condition; every validation and hidden test image under
    the condition of a split drawn uniformly at random, independently of its class (so the condition an
    image shows says nothing about its digit, while in training it names the split).
A learner that ties a class to its split's conditions fails on the images of other conditions; the
oracle (benchmarks/oracle_continual_learning.py) replays `generate()` and undoes each image's true
condition. Layout under --out (uncompressed .npz files with fixed zip timestamps):

    public/train_split{0..4}.npz   x (n, CANVAS**2) float32 in [0, 1], y (n,) int64   (driver only, one split per call)
    public/val_inputs.npz          id (n,) int64, x (n, CANVAS**2) float32            (agent-visible)
    test_inputs/test_inputs.npz    id, x                                              (final test phase only)
    labels/val_labels.csv          id, y                                              (evaluator only)
    labels/test_labels.csv         id, y                                              (evaluator only)

Version 3.0.0 added the canvas and the per-split conditions (version 2: the bare 8x8 digits).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from task_runtime.datasets import prepare_main, stratified_split, write_npz_eval_splits
from task_runtime.digits import digit_images

SPLITS = ((0, 1), (2, 3), (4, 5), (6, 7), (8, 9))  # class-incremental, as split-MNIST
SEED = 20261124  # the train/val/test split and the ids (as in version 2)
CONDITION_SEED = 20270315  # the conditions and every image's rendering (new in 3.0.0)
FRACTIONS = (0.6, 0.2)  # train, val; the rest is test (stratified per class)
CANVAS = 12  # images are CANVAS x CANVAS; the 8x8 digit sits at an offset 0..CANVAS-8 each way
JITTER = 2  # per-image offset jitter around the split's centre, pixels each way
NOISE = 0.04  # sd of the Gaussian pixel noise
GAIN = (0.35, 1.0)  # stroke gain, uniform
GAMMA = (0.4, 2.5)  # stroke contrast exponent, log-uniform
LEVEL = (0.0, 0.25)  # background level, uniform
AMPLITUDE = (0.15, 0.45)  # grating amplitude, uniform
PERIOD = (3.0, 7.0)  # grating period in pixels, uniform
CONDITION_KEYS = ("centre_y", "centre_x", "inverted", "gain", "gamma", "level", "amplitude", "period", "angle", "phase")


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The digits as (n, 8, 8) float32 pixels in [0, 1] and their labels."""
    return digit_images()


def draw_condition(rng: np.random.Generator) -> dict[str, float]:
    """One split's hidden condition."""
    return {"centre_y": float(rng.integers(0, CANVAS - 8 + 1)), "centre_x": float(rng.integers(0, CANVAS - 8 + 1)),
            "inverted": float(rng.random() < 0.5), "gain": float(rng.uniform(*GAIN)), "gamma": float(np.exp(rng.uniform(*np.log(GAMMA)))),
            "level": float(rng.uniform(*LEVEL)), "amplitude": float(rng.uniform(*AMPLITUDE)),
            "period": float(rng.uniform(*PERIOD)), "angle": float(rng.uniform(0.0, np.pi)),
            "phase": float(rng.uniform(0.0, 2 * np.pi))}


def background(cond: dict[str, float]) -> np.ndarray:
    """The condition's (CANVAS, CANVAS) background in [0, 1)."""
    yy, xx = np.mgrid[0:CANVAS, 0:CANVAS].astype(np.float64)
    wave = np.cos(2 * np.pi * (xx * np.cos(cond["angle"]) + yy * np.sin(cond["angle"])) / cond["period"]
                  + cond["phase"])
    return cond["level"] + cond["amplitude"] * 0.5 * (1.0 + wave)


def offsets(cond: dict[str, float], n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, 2) integer offsets of the digit's top-left corner: the condition's centre plus a jitter."""
    centre = np.array([cond["centre_y"], cond["centre_x"]], dtype=np.int64)
    return np.clip(centre + rng.integers(-JITTER, JITTER + 1, size=(n, 2)), 0, CANVAS - 8)


def strokes(images: np.ndarray, cond: dict[str, float]) -> np.ndarray:
    return cond["gain"] * images.astype(np.float64) ** cond["gamma"]


def render(images: np.ndarray, cond: dict[str, float], rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(n, 8, 8) digits under one condition: (n, CANVAS**2) float32 pixels and the (n, 2) offsets used."""
    where = offsets(cond, len(images), rng)
    ink = np.zeros((len(images), CANVAS, CANVAS))
    drawn = strokes(images, cond)
    for i, (dy, dx) in enumerate(where):
        ink[i, dy:dy + 8, dx:dx + 8] = drawn[i]
    pixels = 1.0 - (1.0 - background(cond)) * (1.0 - ink)
    if cond["inverted"]:
        pixels = 1.0 - pixels
    pixels = pixels + rng.normal(0.0, NOISE, size=ink.shape)
    return np.clip(pixels, 0.0, 1.0).reshape(len(images), -1).astype(np.float32), where


def generate() -> dict[str, object]:
    """Every image of every part with its rendering and the hidden draws: `build` writes what the files show;
    benchmarks/oracle_continual_learning.py replays this to know what no learner is told.

    Returns {"x": (n, CANVAS**2) float32, "y": (n,), "ids": (n,), "parts": {train, val, test: row indices},
    "conditions": [5 dicts], "condition": (n,) the split whose condition rendered each row,
    "offsets": (n, 2)}."""
    images, y = load_digits()
    rng = np.random.default_rng(SEED)
    parts = stratified_split(y, (*FRACTIONS, 1 - sum(FRACTIONS)), rng)
    ids = rng.permutation(len(y))  # ids reveal neither the split nor the source order
    draws = np.random.default_rng(CONDITION_SEED)
    conditions = [draw_condition(draws) for _ in SPLITS]
    condition = np.zeros(len(y), dtype=np.int64)
    train = parts["train"]
    condition[train] = y[train] // 2
    for phase in ("val", "test"):
        condition[parts[phase]] = draws.integers(0, len(SPLITS), size=len(parts[phase]))
    x = np.zeros((len(y), CANVAS * CANVAS), dtype=np.float32)
    where = np.zeros((len(y), 2), dtype=np.int64)
    for phase in ("train", "val", "test"):
        for k, cond in enumerate(conditions):
            rows = parts[phase][condition[parts[phase]] == k]
            x[rows], where[rows] = render(images[rows], cond, draws)
    return {"x": x, "y": y, "ids": ids, "parts": parts, "conditions": conditions, "condition": condition,
            "offsets": where}


def build(out: Path) -> None:
    data = generate()
    x, y, parts = data["x"], data["y"], data["parts"]
    for folder in ("public", "test_inputs", "labels"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    train = parts["train"]
    for k, classes in enumerate(SPLITS):
        idx = train[np.isin(y[train], classes)]
        np.savez(out / "public" / f"train_split{k}.npz", x=x[idx], y=y[idx])
    write_npz_eval_splits(out, x, y, data["ids"], parts)


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
