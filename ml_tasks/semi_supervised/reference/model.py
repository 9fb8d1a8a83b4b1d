"""Reference solution: undo what each image shows of its nuisances, then label spreading with class mass
normalisation and nearest neighbours.

0. Cleaning, per image (the nuisances are hidden, but some show in the image itself): a canvas whose
   border is mostly bright is taken as inverted and flipped back; the background level (the median pixel)
   is subtracted and the ink rescaled to its 97th percentile; of the ink's connected pieces only the
   heaviest one (and the pixels next to it) is kept, which drops most clutter that does not touch the
   digit; faint remains are zeroed.
1. Canonical form: the cleaned image is moved so its centre of mass sits at the centre of a 16x16 grid,
   deskewed (its row-column covariance sheared away) and resized to a fixed spread of its ink, then
   blurred and scaled to unit length.
2. Label spreading (Zhou et al. 2004) over the labeled and unlabeled training images with a kNN graph on
   the canonical forms gives every training image a score per class.
3. Class mass normalisation (Zhu, Ghahramani & Lafferty 2003): the splits are stratified, so each digit
   is about a tenth of the pool; rescaling the class scores until every class holds a tenth (Sinkhorn
   iterations) keeps an atypical labeled image's neighbours from swallowing another class.
4. One round of self-training on the graph: the most confident half of each class becomes labeled and
   the propagation and normalisation run again.
5. New images get the majority pseudo-label of their nearest training images, so each prediction
   depends on its own image only.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage
from sklearn.neighbors import KNeighborsClassifier
from sklearn.semi_supervised import LabelSpreading

N_CLASSES = 10


def clean(image: np.ndarray) -> np.ndarray:
    """One square image in [0, 1]: polarity, background level, gain and detached clutter removed."""
    border = np.concatenate([image[0], image[-1], image[:, 0], image[:, -1]])
    if np.median(border) > 0.5:
        image = 1.0 - image
    image = np.clip(image - np.median(image), 0, None)
    image = np.clip(image / (np.percentile(image, 97) + 1e-6), 0, 1)
    pieces, count = ndimage.label(image > 0.3)
    if count > 1:
        mass = ndimage.sum(image, pieces, range(1, count + 1))
        image = image * ndimage.binary_dilation(pieces == 1 + int(np.argmax(mass)))
    image[image < 0.15] = 0
    return image


def canonical(image: np.ndarray, size: int, spread: float, blur: float) -> np.ndarray:
    """The image centred, deskewed and resized to a fixed ink spread on a size x size grid, unit length."""
    side = image.shape[0]
    mass = image.sum()
    if mass <= 1e-8:
        return np.zeros(size * size)
    rows, cols = np.mgrid[0:side, 0:side].astype(np.float64)
    row, col = (rows * image).sum() / mass, (cols * image).sum() / mass
    var = ((rows - row) ** 2 * image).sum() / mass
    cov = ((rows - row) * (cols - col) * image).sum() / mass
    skew = float(np.clip(cov / var, -1, 1)) if var > 1e-6 else 0.0
    zoom = float(np.clip(spread / np.sqrt(var), 0.5, 3.0)) if var > 1e-6 else 1.0
    matrix = np.array([[1.0, 0.0], [skew, 1.0]]) / zoom
    middle = np.full(2, (size - 1) / 2)
    out = ndimage.affine_transform(image, matrix, offset=np.array([row, col]) - matrix @ middle,
                                   output_shape=(size, size), order=1)
    out = ndimage.gaussian_filter(out, blur) if blur > 0 else out
    return out.ravel() / (np.linalg.norm(out) + 1e-8)


def features(x: np.ndarray, params: dict) -> np.ndarray:
    side = int(round(np.sqrt(x.shape[1])))
    return np.stack([canonical(clean(image), int(params["size"]), float(params["spread"]), float(params["blur"]))
                     for image in x.reshape(-1, side, side).astype(np.float64)])


def balance(scores: np.ndarray, iterations: int = 200) -> np.ndarray:
    """Rescale class columns to equal mass and rows to sum to one (Sinkhorn)."""
    scores = np.maximum(scores, 1e-12)
    for _ in range(iterations):
        scores = scores / scores.sum(axis=0, keepdims=True) * (len(scores) / scores.shape[1])
        scores = scores / scores.sum(axis=1, keepdims=True)
    return scores


def propagate(x: np.ndarray, y: np.ndarray, params: dict) -> np.ndarray:
    spreading = LabelSpreading(kernel="knn", n_neighbors=int(params["graph_neighbors"]), alpha=float(params["alpha"]),
                               max_iter=int(params["max_iter"]), tol=1e-4).fit(x, y)
    return balance(spreading.label_distributions_)


def fit(x_labeled: np.ndarray, y_labeled: np.ndarray, x_unlabeled: np.ndarray, params: dict, device: str):
    x = features(np.concatenate([x_labeled, x_unlabeled]), params)
    seeds = np.concatenate([y_labeled, np.full(len(x_unlabeled), -1)])
    scores = propagate(x, seeds, params)
    for _ in range(int(params["rounds"])):
        pseudo, confidence = scores.argmax(axis=1), scores.max(axis=1)
        seeds = np.full(len(x), -1)
        for cls in range(N_CLASSES):
            members = np.flatnonzero(pseudo == cls)
            keep = members[np.argsort(-confidence[members], kind="stable")[:int(len(members) * params["keep"])]]
            seeds[keep] = cls
        seeds[:len(y_labeled)] = y_labeled
        scores = propagate(x, seeds, params)
    knn = KNeighborsClassifier(n_neighbors=int(params["neighbors"])).fit(x, scores.argmax(axis=1))
    return {"params": dict(params), "knn": knn}


def predict(model, x: np.ndarray) -> np.ndarray:
    return model["knn"].predict(features(x, model["params"]))
