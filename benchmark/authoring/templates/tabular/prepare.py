"""Write the __TASK_NAME__ task's data into a workspace folder (template: a tabular classifier).

Run by `researchbench.benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/__TASK_NAME__>

TODO(author): replace the dataset. The template uses scikit-learn's bundled breast-cancer table
(offline, 569 rows, 30 numeric features, binary target). Keep prepare deterministic: fixed seeds,
sorted rows, a fixed float format, so two runs write the same bytes (`setup.py --check` verifies it).
Layout written under --out:

    public/train.csv             id, features..., label      (agent-visible)
    public/val_inputs.csv        id, features...             (agent-visible)
    test_inputs/test_inputs.csv  id, features...             (final test phase only)
    labels/val_labels.csv        id, label                   (evaluator only)
    labels/test_labels.csv       id, label                   (evaluator only)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime.datasets import prepare_main

SPLIT_SEED = 20250101  # changing it changes the task: bump the version in task.yaml
FRACTIONS = (0.6, 0.2, 0.2)  # train / val / test, stratified by label
FLOAT_FORMAT = "%.10g"


def load_table() -> tuple[pd.DataFrame, np.ndarray]:
    """Features (clean column names) and integer labels."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    features = data.data.copy()
    features.columns = [str(c).replace(" ", "_") for c in features.columns]
    return features, data.target.to_numpy().astype(int)


def split(labels: np.ndarray) -> dict[str, np.ndarray]:
    """A seeded split of row indices, stratified so each part keeps the class balance."""
    rng = np.random.default_rng(SPLIT_SEED)
    parts: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": []}
    for cls in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == cls))
        n_train, n_val = round(FRACTIONS[0] * len(idx)), round(FRACTIONS[1] * len(idx))
        parts["train"].append(idx[:n_train])
        parts["val"].append(idx[n_train:n_train + n_val])
        parts["test"].append(idx[n_train + n_val:])
    return {name: np.sort(np.concatenate(chunks)) for name, chunks in parts.items()}


def write(frame: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.sort_values("id", kind="stable").to_csv(path, index=False, float_format=FLOAT_FORMAT, lineterminator="\n")


def build(out: Path) -> None:
    features, labels = load_table()
    # Ids are a seeded relabelling, so neither ids nor row order reveal the split or the source order.
    ids = np.random.default_rng(SPLIT_SEED + 1).permutation(len(labels))
    parts = split(labels)
    for name, idx in parts.items():
        inputs = pd.concat([pd.DataFrame({"id": ids[idx]}), features.iloc[idx].reset_index(drop=True)], axis=1)
        truth = pd.DataFrame({"id": ids[idx], "label": labels[idx]})
        if name == "train":
            write(inputs.assign(label=labels[idx]), out / "public" / "train.csv")
        elif name == "val":
            write(inputs, out / "public" / "val_inputs.csv")
            write(truth, out / "labels" / "val_labels.csv")
        else:
            write(inputs, out / "test_inputs" / "test_inputs.csv")
            write(truth, out / "labels" / "test_labels.csv")


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
