"""Write the federated_learning task's data: sklearn's digits spread over 10 non-IID clients.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/federated_learning>

Offline and deterministic (bundled digits, fixed seeds, uncompressed .npz with fixed zip timestamps).
The training part (60% per class) is split over the clients with label proportions drawn per class
from Dirichlet(0.1) (Hsu et al. 2019), the usual non-IID benchmark split, so most clients see only a
few classes and shard sizes differ. Layout under --out:

    public/client{0..9}.npz        x (n, 64) float32 in [0, 1], y (n,) int64   (driver only, one client per call)
    public/val_inputs.npz          id, x                                        (agent-visible)
    test_inputs/test_inputs.npz    id, x                                        (final test phase only)
    labels/val_labels.csv          id, y                                        (evaluator only)
    labels/test_labels.csv         id, y                                        (evaluator only)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from task_runtime.datasets import prepare_main, stratified_split, write_npz_eval_splits
from task_runtime.digits import digit_images

N_CLIENTS = 10
ALPHA = 0.1
MIN_SHARD = 30  # redraw the Dirichlet split until every client has at least this many examples
SEED = 20261125
FRACTIONS = (0.6, 0.2)  # train, val; the rest is test (stratified per class)


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The digits as (n, 64) float32 pixels in [0, 1] and their labels."""
    images, labels = digit_images()
    return images.reshape(len(images), -1), labels


def stratified_parts(y: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return stratified_split(y, (*FRACTIONS, 1 - sum(FRACTIONS)), rng, shuffle=False)


def dirichlet_shards(y: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """Per class, cut its (shuffled) examples among the clients in Dirichlet(ALPHA) proportions."""
    while True:
        shards: list[list[np.ndarray]] = [[] for _ in range(N_CLIENTS)]
        for cls in np.unique(y):
            idx = rng.permutation(np.flatnonzero(y == cls))
            cuts = (np.cumsum(rng.dirichlet([ALPHA] * N_CLIENTS)) * len(idx)).astype(int)[:-1]
            for client, part in enumerate(np.split(idx, cuts)):
                shards[client].append(part)
        merged = [rng.permutation(np.concatenate(s)) for s in shards]
        if min(map(len, merged)) >= MIN_SHARD:
            return merged


def build(out: Path) -> None:
    x, y = load_digits()
    rng = np.random.default_rng(SEED)
    parts = stratified_parts(y, rng)
    ids = rng.permutation(len(y))
    for folder in ("public", "test_inputs", "labels"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    train = parts["train"]
    for client, shard in enumerate(dirichlet_shards(y[train], rng)):
        idx = train[shard]
        np.savez(out / "public" / f"client{client}.npz", x=x[idx], y=y[idx])
    write_npz_eval_splits(out, x, y, ids, parts)


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
