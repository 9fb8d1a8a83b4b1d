"""Write the representation_learning task's data: sklearn's digits at random places on a 12x12 canvas.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/representation_learning>

Each 8x8 digit is pasted at a random offset (0..4 in each direction) on a blank 12x12 canvas and
light Gaussian pixel noise is added, so raw pixels are a poor representation: a linear probe on them
must learn every digit at every position from few labels, while a translation-invariant encoder
needs one. Offline and deterministic (bundled digits, fixed seeds, uncompressed .npz with fixed
timestamps). Layout under --out:

    public/unlabeled.npz              x (1000, 144) float32              pretraining data, no labels
    public/probe_train_inputs.npz     id, x (200, 144)                   the probe's training inputs (labels hidden)
    public/val_inputs.npz             id, x (300, 144)                   validation probe inputs
    test_inputs/test_inputs.npz       id, x (297, 144)                   test probe inputs (final test phase only)
    labels/probe_train_labels.csv     id, y                              evaluator only
    labels/val_labels.csv, labels/test_labels.csv   id, y                evaluator only
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime.datasets import prepare_main, write_tables
from task_runtime.digits import digit_images, on_canvas

SEED = 20261126
CANVAS = 12
NOISE = 0.05
SIZES = {"unlabeled": 1000, "probe_train": 200, "val": 300}  # the rest (297) is the test probe set


def stratified_order(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A permutation in which every prefix is close to class-balanced (round-robin over shuffled classes)."""
    queues = [list(rng.permutation(np.flatnonzero(y == c))) for c in range(10)]
    order = []
    while any(queues):
        for q in queues:
            if q:
                order.append(q.pop())
    return np.asarray(order)


def build(out: Path) -> None:
    images, y = digit_images()
    rng = np.random.default_rng(SEED)
    x = on_canvas(images, CANVAS, NOISE, rng)
    order = stratified_order(y, rng)
    ids = rng.permutation(len(y))
    parts, start = {}, 0
    for name, size in SIZES.items():
        parts[name] = order[start:start + size]
        start += size
    parts["test"] = order[start:]
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
