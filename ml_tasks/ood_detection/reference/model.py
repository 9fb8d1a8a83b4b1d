"""Reference solution: nearest neighbours among the training glyphs, made blind to brightness and to whole-pixel
shifts.

Softmax confidence only asks which known class an image resembles most, so a glyph unlike every training glyph
(a novel class, an altered glyph) can still get a confident answer. The distance to the nearest training images
asks whether it resembles any training glyph at all (the nearest-neighbour detector of Sun et al. 2022, here on
pixels), but a raw pixel distance also measures the nuisances: a glyph moved by one pixel is far from its twin,
and a dim glyph is far from a bright one. So every training glyph is stored under each whole-pixel shift of
-1..1 per axis, every image is scaled to unit length, and the score is the mean distance to the k nearest
stored images.
"""

from __future__ import annotations

import numpy as np
from sklearn.neighbors import NearestNeighbors

SHIFT = 1  # largest whole-pixel shift stored, each axis


def shifted(x: np.ndarray) -> np.ndarray:
    """Every image (n, 64) under each shift of -SHIFT..SHIFT pixels per axis, blank pixels shifted in: (9 n, 64)."""
    size = 2 * SHIFT + 1
    padded = np.pad(x.reshape(-1, 8, 8), ((0, 0), (SHIFT, SHIFT), (SHIFT, SHIFT)))
    return np.concatenate([padded[:, dy:dy + 8, dx:dx + 8].reshape(len(x), 64)
                           for dy in range(size) for dx in range(size)])


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def fit(x: np.ndarray, y: np.ndarray, params: dict, device: str) -> NearestNeighbors:
    return NearestNeighbors(n_neighbors=int(params["k"])).fit(unit(shifted(x.astype(np.float64))))


def score(detector: NearestNeighbors, x: np.ndarray) -> np.ndarray:
    distances, _ = detector.kneighbors(unit(x.astype(np.float64)))
    return distances.mean(axis=1)  # higher = farther from every stored training glyph = more likely OOD
