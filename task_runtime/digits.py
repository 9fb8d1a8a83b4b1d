"""scikit-learn's 8x8 digits, as the digits-based tasks build their data from them.

The digits ship with scikit-learn, so these tasks prepare offline. Pixels are integers 0..16; tasks that
store them in CSV files keep them as integers (two runs write the same bytes) and their drivers scale
them to [0, 1] on reading, while tasks that store float arrays scale them once here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PIXEL_MAX = 16.0  # the digits' brightest pixel
PIXELS = [f"p{i}" for i in range(64)]  # the CSV columns of one 8x8 image, row by row


def digit_pixels() -> tuple[np.ndarray, np.ndarray]:
    """The 1797 images as integer pixels (n, 64) in 0..16, and their digits (n,) int64."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    return np.asarray(digits.data).round().astype(np.int64), np.asarray(digits.target, dtype=np.int64)


def digit_images() -> tuple[np.ndarray, np.ndarray]:
    """The 1797 images as float32 (n, 8, 8) scaled to [0, 1], and their digits (n,) int64."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    return (digits.images / PIXEL_MAX).astype(np.float32), digits.target.astype(np.int64)


def on_canvas(images: np.ndarray, size: int, noise: float, rng: np.random.Generator) -> np.ndarray:
    """Each (8, 8) image pasted at a random offset on a blank size x size canvas, plus Gaussian pixel
    noise of sd `noise`, clipped to [0, 1] and flattened: (n, size * size) float32.

    A nuisance a model must see through: the digit's position carries no information, and the noise
    makes every image unique (a model that fits its training images remembers them)."""
    canvas = np.zeros((len(images), size, size), dtype=np.float32)
    offsets = rng.integers(0, size - 8 + 1, size=(len(images), 2))
    for i, (dy, dx) in enumerate(offsets):
        canvas[i, dy:dy + 8, dx:dx + 8] = images[i]
    noisy = canvas + rng.normal(0.0, noise, size=canvas.shape).astype(np.float32)
    return np.clip(noisy, 0.0, 1.0).reshape(len(images), -1).astype(np.float32)


def scaled_pixels(frame: pd.DataFrame, columns: list[str] = PIXELS) -> np.ndarray:
    """A table's pixel columns as float32 in [0, 1]: what a digits model is fitted on."""
    return (frame[columns].to_numpy(dtype=np.float32) / PIXEL_MAX).astype(np.float32)
