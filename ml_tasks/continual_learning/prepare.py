"""Write the continual_learning task's data: sklearn's digits as five class-incremental splits.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/continual_learning>

Offline and deterministic (sklearn's bundled digits, a fixed seed, uncompressed .npz files whose
zip entries carry a fixed timestamp), so two runs write the same bytes. Layout under --out:

    public/train_split{0..4}.npz   x (n, 64) float32 in [0, 1], y (n,) int64   (driver only, one split per call)
    public/val_inputs.npz          id (n,) int64, x (n, 64) float32            (agent-visible)
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

SPLITS = ((0, 1), (2, 3), (4, 5), (6, 7), (8, 9))  # class-incremental, as split-MNIST
SEED = 20261124
FRACTIONS = (0.6, 0.2)  # train, val; the rest is test (stratified per class)


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The digits as (n, 64) float32 pixels in [0, 1] and their labels."""
    images, labels = digit_images()
    return images.reshape(len(images), -1), labels


def stratified_parts(y: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return stratified_split(y, (*FRACTIONS, 1 - sum(FRACTIONS)), rng)


def build(out: Path) -> None:
    x, y = load_digits()
    rng = np.random.default_rng(SEED)
    parts = stratified_parts(y, rng)
    ids = rng.permutation(len(y))  # ids reveal neither the split nor the source order
    for folder in ("public", "test_inputs", "labels"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    train = parts["train"]
    for k, classes in enumerate(SPLITS):
        idx = train[np.isin(y[train], classes)]
        np.savez(out / "public" / f"train_split{k}.npz", x=x[idx], y=y[idx])
    write_npz_eval_splits(out, x, y, ids, parts)


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
