"""Write the fairness task's data: Fair's (1978) affairs survey, shipped offline by statsmodels.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/fairness>

6366 married women answered a Redbook survey. Label `y` = 1 if they reported any extramarital affair
(`affairs > 0`); sensitive attribute `a` = 1 for women aged 32 or older (39% of rows; the label's base
rate is 27% for younger and 40% for older women). One seeded split, stratified by (y, a): train 60%,
val 20%, test 20%. Row ids are a seeded relabelling. Layout written under --out:

    public/train.csv              id, features, a, y      (agent-visible)
    public/val_inputs.csv         id, features, a         (agent-visible)
    test_inputs/test_inputs.csv   id, features, a         (final test phase only)
    labels/{val,test}_labels.csv  id, y, a                (evaluator only)

Two runs write the same bytes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime.datasets import prepare_main

SPLIT_SEED = 20261124
AGE_THRESHOLD = 32  # a = 1 for age >= 32
FRACTIONS = (0.6, 0.2, 0.2)
FEATURES = ["rate_marriage", "age", "yrs_married", "children", "religious", "educ", "occupation",
            "occupation_husb"]
FLOAT_FORMAT = "%.6g"


def load() -> pd.DataFrame:
    from statsmodels.datasets import fair

    raw = fair.load_pandas().data
    frame = raw[FEATURES].copy()
    frame["a"] = (raw["age"] >= AGE_THRESHOLD).astype(int)
    frame["y"] = (raw["affairs"] > 0).astype(int)
    return frame.reset_index(drop=True)


def split(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SPLIT_SEED)
    parts: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": []}
    for _, group in frame.groupby(["y", "a"], sort=True):
        idx = rng.permutation(group.index.to_numpy())
        n_train, n_val = round(FRACTIONS[0] * len(idx)), round(FRACTIONS[1] * len(idx))
        parts["train"].append(idx[:n_train])
        parts["val"].append(idx[n_train:n_train + n_val])
        parts["test"].append(idx[n_train + n_val:])
    return {name: np.sort(np.concatenate(chunks)) for name, chunks in parts.items()}


def build(out: Path) -> None:
    frame = load()
    frame.insert(0, "id", np.random.default_rng(SPLIT_SEED + 1).permutation(len(frame)))
    parts = split(frame)
    files = {
        "public/train.csv": frame.loc[parts["train"], ["id", *FEATURES, "a", "y"]],
        "public/val_inputs.csv": frame.loc[parts["val"], ["id", *FEATURES, "a"]],
        "test_inputs/test_inputs.csv": frame.loc[parts["test"], ["id", *FEATURES, "a"]],
        "labels/val_labels.csv": frame.loc[parts["val"], ["id", "y", "a"]],
        "labels/test_labels.csv": frame.loc[parts["test"], ["id", "y", "a"]],
    }
    for rel, table in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        table.sort_values("id").to_csv(path, index=False, float_format=FLOAT_FORMAT, lineterminator="\n")


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
