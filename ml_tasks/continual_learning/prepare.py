"""Write the continual_learning task's data: sklearn's digits as five class-incremental splits, each split
recorded under its own hidden distribution of conditions, drawn image by image.

Run by `researchbench.benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/continual_learning>

Construction (all draws from fixed seeds, so two runs write the same bytes):
  - the 1797 digits are split per class 40/30/30 into train, validation and hidden test; the training
    images of classes 2k and 2k+1 form split k (k = 0..4), as in split-MNIST;
  - every split k gets one STYLE, drawn once and written nowhere: a distribution from which every image
    recorded under it draws its own condition. A style fixes the typical geometry (rotation, size, aspect,
    shear and place of the digit on the CANVAS x CANVAS canvas, each image scattered around it), how thick
    the strokes are, the pixel-noise level, and two LOOKS (polarity, stroke gain and contrast exponent,
    background level and grating period, angle and amplitude) between which its images choose with the
    style's own odds; every image then draws its own grating phase, gain jitter and geometry jitter;
  - an image is rendered as: the 8x8 digit thickened (blended with its 3x3 maximum), warped onto the canvas
    by its affine map (bilinear), strokes = gain * ink ** gamma, background and strokes screened together,
    1 - (1 - background) * (1 - stroke), inverted if its look says so, plus Gaussian noise, clipped to [0, 1];
  - a training image is drawn from its split's style; every validation and hidden test image from the style
    of a split drawn uniformly at random, independently of its class (so how an image looks says nothing
    about its digit, while in training it names the split).
A learner that ties a class to its split's look fails on the images of other styles; the oracle
(benchmarks/oracle_continual_learning.py) replays `generate()` and undoes each image's true condition.
Layout under --out (uncompressed .npz files with fixed zip timestamps):

    public/train_split{0..4}.npz   x (n, CANVAS**2) float32 in [0, 1], y (n,) int64   (driver only, one split per call)
    public/val_inputs.npz          id (n,) int64, x (n, CANVAS**2) float32            (agent-visible)
    test_inputs/test_inputs.npz    id, x                                              (final test phase only)
    labels/val_labels.csv          id, y                                              (evaluator only)
    labels/test_labels.csv         id, y                                              (evaluator only)

Version 4.0.0: a distribution of conditions per split, drawn per image, with geometry and stroke thickness
(version 3: one fixed condition per split, position jitter only; version 2: the bare 8x8 digits).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from task_runtime.datasets import prepare_main, stratified_split, write_npz_eval_splits
from task_runtime.digits import digit_images

SPLITS = ((0, 1), (2, 3), (4, 5), (6, 7), (8, 9))  # class-incremental, as split-MNIST
SEED = 20261124  # the train/val/test split and the ids
STYLE_SEED = 20280412  # the styles and every image's condition and rendering (new in 4.0.0)
FRACTIONS = (0.4, 0.3)  # train, val; the rest is test (stratified per class)
CANVAS = 12  # images are CANVAS x CANVAS
LOOKS = 2  # looks per style
# a style's draws (uniform unless said otherwise)
ROTATION = (-40.0, 40.0)  # mean rotation, degrees
ROTATION_SD = (4.0, 14.0)  # per-image rotation sd, degrees
SCALE = (0.9, 1.05)  # mean size of the 8x8 digit on the canvas
ASPECT = (0.8, 1.25)  # mean width / height, log-uniform
SHEAR = (-0.35, 0.35)  # mean horizontal shear
CENTRE = 1.5  # mean centre offset from the canvas centre, pixels each way
JITTER = 1.0  # per-image centre jitter, pixels each way (uniform)
THICK = (0.0, 0.8)  # mean stroke thickening (blend with the 3x3 maximum)
NOISE = (0.02, 0.08)  # pixel-noise sd
GAIN = (0.6, 1.0)  # a look's stroke gain
GAMMA = (0.4, 2.5)  # a look's stroke contrast exponent, log-uniform
LEVEL = (0.0, 0.25)  # a look's background level
AMPLITUDE = (0.1, 0.3)  # a look's grating amplitude
PERIOD = (3.0, 7.0)  # a look's grating period in pixels
SCALE_SD, ASPECT_SD, SHEAR_SD, THICK_SD, GAIN_SD = 0.06, 0.06, 0.1, 0.15, 0.15  # per-image scatter
CONDITION_KEYS = ("rotation", "scale", "aspect", "shear", "centre_y", "centre_x", "thick", "noise", "inverted",
                  "gain", "gamma", "level", "amplitude", "period", "angle", "phase")


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The digits as (n, 8, 8) float32 pixels in [0, 1] and their labels."""
    return digit_images()


def log_uniform(rng: np.random.Generator, bounds: tuple[float, float]) -> float:
    return float(np.exp(rng.uniform(*np.log(bounds))))


def draw_style(rng: np.random.Generator) -> dict[str, object]:
    """One split's hidden style: the distribution its images draw their conditions from."""
    style = {"rotation": float(rng.uniform(*ROTATION)), "rotation_sd": float(rng.uniform(*ROTATION_SD)),
             "scale": float(rng.uniform(*SCALE)), "aspect": log_uniform(rng, ASPECT),
             "shear": float(rng.uniform(*SHEAR)), "centre_y": float(rng.uniform(-CENTRE, CENTRE)),
             "centre_x": float(rng.uniform(-CENTRE, CENTRE)), "thick": float(rng.uniform(*THICK)),
             "noise": float(rng.uniform(*NOISE)), "odds": float(rng.uniform(0.2, 0.8))}
    style["looks"] = [{"inverted": float(rng.random() < 0.5), "gain": float(rng.uniform(*GAIN)),
                       "gamma": log_uniform(rng, GAMMA), "level": float(rng.uniform(*LEVEL)),
                       "amplitude": float(rng.uniform(*AMPLITUDE)), "period": float(rng.uniform(*PERIOD)),
                       "angle": float(rng.uniform(0.0, np.pi))} for _ in range(LOOKS)]
    return style


def draw_conditions(style: dict, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """n images' conditions drawn from `style`: a dict of (n,) arrays keyed by CONDITION_KEYS."""
    look = (rng.random(n) >= style["odds"]).astype(np.int64)
    pick = {key: np.array([style["looks"][j][key] for j in look]) for key in style["looks"][0]}
    return {"rotation": np.deg2rad(style["rotation"] + style["rotation_sd"] * rng.standard_normal(n)),
            "scale": style["scale"] * np.exp(SCALE_SD * rng.standard_normal(n)),
            "aspect": style["aspect"] * np.exp(ASPECT_SD * rng.standard_normal(n)),
            "shear": style["shear"] + SHEAR_SD * rng.standard_normal(n),
            "centre_y": style["centre_y"] + rng.uniform(-JITTER, JITTER, n),
            "centre_x": style["centre_x"] + rng.uniform(-JITTER, JITTER, n),
            "thick": np.clip(style["thick"] + THICK_SD * rng.standard_normal(n), 0.0, 1.0),
            "noise": np.full(n, style["noise"]), "inverted": pick["inverted"],
            "gain": np.clip(pick["gain"] * np.exp(GAIN_SD * rng.standard_normal(n)), 0.2, 1.0),
            "gamma": pick["gamma"], "level": pick["level"], "amplitude": pick["amplitude"],
            "period": pick["period"], "angle": pick["angle"], "phase": rng.uniform(0.0, 2 * np.pi, n)}


def backgrounds(cond: dict[str, np.ndarray]) -> np.ndarray:
    """(n, CANVAS, CANVAS) backgrounds in [0, 1) of n conditions."""
    yy, xx = np.mgrid[0:CANVAS, 0:CANVAS].astype(np.float64)
    a = cond["angle"][:, None, None]
    wave = np.cos(2 * np.pi * (xx * np.cos(a) + yy * np.sin(a)) / cond["period"][:, None, None]
                  + cond["phase"][:, None, None])
    return cond["level"][:, None, None] + cond["amplitude"][:, None, None] * 0.5 * (1.0 + wave)


def affine(cond: dict[str, np.ndarray]) -> np.ndarray:
    """(n, 2, 2) maps from digit coordinates (row, col about the digit's centre) to canvas coordinates."""
    c, s = np.cos(cond["rotation"]), np.sin(cond["rotation"])
    rot = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)
    sy, sx = cond["scale"] / np.sqrt(cond["aspect"]), cond["scale"] * np.sqrt(cond["aspect"])
    zero = np.zeros_like(sy)
    shape = np.stack([np.stack([sy, zero], -1), np.stack([cond["shear"] * sy, sx], -1)], -2)
    return rot @ shape


def bilinear(images: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """images (n, h, w) sampled at (n, m) fractional pixel coordinates; zero outside."""
    n, h, w = images.shape
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))
    r = np.clip(rows + 1.0, 0.0, h + 1.0 - 1e-9)
    q = np.clip(cols + 1.0, 0.0, w + 1.0 - 1e-9)
    r0, q0 = np.floor(r).astype(np.int64), np.floor(q).astype(np.int64)
    r1, q1 = np.minimum(r0 + 1, h + 1), np.minimum(q0 + 1, w + 1)
    fr, fq = r - r0, q - q0
    i = np.arange(n)[:, None]
    return ((1 - fr) * (1 - fq) * padded[i, r0, q0] + (1 - fr) * fq * padded[i, r0, q1]
            + fr * (1 - fq) * padded[i, r1, q0] + fr * fq * padded[i, r1, q1])


def thicken(images: np.ndarray, thick: np.ndarray) -> np.ndarray:
    padded = np.pad(images.astype(np.float64), ((0, 0), (1, 1), (1, 1)))
    most = np.max([padded[:, dy:dy + 8, dx:dx + 8] for dy in range(3) for dx in range(3)], axis=0)
    return (1.0 - thick[:, None, None]) * images + thick[:, None, None] * most


def warp(images: np.ndarray, cond: dict[str, np.ndarray]) -> np.ndarray:
    """(n, 8, 8) ink warped onto the canvas by each condition's affine map: (n, CANVAS, CANVAS)."""
    inverse = np.linalg.inv(affine(cond))
    yy, xx = np.mgrid[0:CANVAS, 0:CANVAS].reshape(2, -1).astype(np.float64)
    centre = (CANVAS - 1) / 2
    dy = yy[None] - centre - cond["centre_y"][:, None]
    dx = xx[None] - centre - cond["centre_x"][:, None]
    src_r = inverse[:, 0, 0, None] * dy + inverse[:, 0, 1, None] * dx + 3.5
    src_c = inverse[:, 1, 0, None] * dy + inverse[:, 1, 1, None] * dx + 3.5
    return bilinear(images, src_r, src_c).reshape(len(images), CANVAS, CANVAS)


def render(images: np.ndarray, cond: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """(n, 8, 8) digits under their n conditions: (n, CANVAS**2) float32 pixels."""
    ink = np.clip(warp(thicken(images, cond["thick"]), cond), 0.0, 1.0)
    stroke = cond["gain"][:, None, None] * ink ** cond["gamma"][:, None, None]
    pixels = 1.0 - (1.0 - backgrounds(cond)) * (1.0 - stroke)
    inv = cond["inverted"][:, None, None] > 0.5
    pixels = np.where(inv, 1.0 - pixels, pixels)
    pixels = pixels + cond["noise"][:, None, None] * rng.standard_normal(pixels.shape)
    return np.clip(pixels, 0.0, 1.0).reshape(len(images), -1).astype(np.float32)


def generate() -> dict[str, object]:
    """Every image of every part with its rendering and the hidden draws: `build` writes what the files show;
    benchmarks/oracle_continual_learning.py replays this to know what no learner is told.

    Returns {"x": (n, CANVAS**2) float32, "y": (n,), "ids": (n,), "parts": {train, val, test: row indices},
    "styles": [5 dicts], "style": (n,) the split whose style each row was drawn from,
    "conditions": {key: (n,) array} every row's own condition}."""
    images, y = load_digits()
    rng = np.random.default_rng(SEED)
    parts = stratified_split(y, (*FRACTIONS, 1 - sum(FRACTIONS)), rng)
    ids = rng.permutation(len(y))  # ids reveal neither the split nor the source order
    draws = np.random.default_rng(STYLE_SEED)
    styles = [draw_style(draws) for _ in SPLITS]
    style = np.zeros(len(y), dtype=np.int64)
    train = parts["train"]
    style[train] = y[train] // 2
    for phase in ("val", "test"):
        style[parts[phase]] = draws.integers(0, len(SPLITS), size=len(parts[phase]))
    x = np.zeros((len(y), CANVAS * CANVAS), dtype=np.float32)
    conditions = {key: np.zeros(len(y)) for key in CONDITION_KEYS}
    for phase in ("train", "val", "test"):
        for k, st in enumerate(styles):
            rows = parts[phase][style[parts[phase]] == k]
            cond = draw_conditions(st, len(rows), draws)
            x[rows] = render(images[rows], cond, draws)
            for key in CONDITION_KEYS:
                conditions[key][rows] = cond[key]
    return {"x": x, "y": y, "ids": ids, "parts": parts, "styles": styles, "style": style, "conditions": conditions}


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
