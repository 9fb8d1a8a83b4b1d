"""Reference solution: re-centring, label spreading with class mass normalisation, then nearest neighbours.

0. Re-centring: the digits sit at random positions on the canvas (and at random angles and sizes), so
   raw-pixel neighbours often share a position rather than a digit. Every image is shifted (bilinear) so
   its centre of mass sits at the canvas centre; everything below works on the re-centred images.
1. Label spreading (Zhou et al. 2004) over the labeled and unlabeled training images with an RBF graph
   gives every training image a score per class.
2. Class mass normalisation (Zhu, Ghahramani & Lafferty 2003): the splits are stratified, so each digit
   is about a tenth of the pool. With one label per class, an atypical labeled image lets a neighbouring
   class swallow its cluster (here most 9s go to 3); rescaling the class scores until every class holds
   a tenth of the pool (Sinkhorn iterations) gives the cluster back.
3. One round of self-training on the graph: the most confident half of each class becomes labeled and
   the propagation and normalisation run again.
4. New images get the majority pseudo-label of their nearest training images, so each prediction
   depends on its own image only.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage
from sklearn.neighbors import KNeighborsClassifier
from sklearn.semi_supervised import LabelSpreading

N_CLASSES = 10


def recentre(x: np.ndarray) -> np.ndarray:
    """Each flattened square image shifted so its centre of mass sits at the canvas centre (float64)."""
    side = int(round(np.sqrt(x.shape[1])))
    middle = (side - 1) / 2
    out = np.empty(x.shape, dtype=np.float64)
    for i, image in enumerate(x.reshape(-1, side, side).astype(np.float64)):
        row, col = ndimage.center_of_mass(image) if image.sum() > 0 else (middle, middle)
        out[i] = ndimage.shift(image, (middle - row, middle - col), order=1, mode="constant").ravel()
    return out


def balance(scores: np.ndarray, iterations: int = 200) -> np.ndarray:
    """Rescale class columns to equal mass and rows to sum to one (Sinkhorn)."""
    scores = np.maximum(scores, 1e-12)
    for _ in range(iterations):
        scores = scores / scores.sum(axis=0, keepdims=True) * (len(scores) / scores.shape[1])
        scores = scores / scores.sum(axis=1, keepdims=True)
    return scores


def propagate(x: np.ndarray, y: np.ndarray, params: dict) -> np.ndarray:
    spreading = LabelSpreading(kernel="rbf", gamma=float(params["gamma"]), alpha=float(params["alpha"]),
                               max_iter=int(params["max_iter"]), tol=1e-4).fit(x, y)
    return balance(spreading.label_distributions_)


def fit(x_labeled: np.ndarray, y_labeled: np.ndarray, x_unlabeled: np.ndarray, params: dict, device: str):
    x = recentre(np.concatenate([x_labeled, x_unlabeled]))
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
    return KNeighborsClassifier(n_neighbors=int(params["neighbors"])).fit(x, scores.argmax(axis=1))


def predict(model, x: np.ndarray) -> np.ndarray:
    return model.predict(recentre(x))
