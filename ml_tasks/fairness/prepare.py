"""Write the fairness task's data: Fair's (1978) survey covariates with labels drawn from a hidden model.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/fairness>

The covariates are real: 6366 married women answered a Redbook survey (shipped offline by statsmodels);
sensitive attribute `a` = 1 for women aged 32 or older (39% of rows). Since version 4.0.0 the label is
not the survey's answer: `y ~ Bernoulli(sigmoid(f(x, a)))`, with `f` drawn once from the family the
description documents (z = the 8 covariates, each standardized over all rows):

    coarse(x, a) = a sum of COARSE_TERMS random terms, each a covariate, a pairwise product, a step
                   1[z_j > c] (c between the 20% and 80% quantiles) or one of these acting in one group
                   only (times a or 1 - a); each centred, scaled to unit sd, times a random sign and a
                   weight in [0.5, 1.5]; the sum rescaled to sd in COARSE_SD
    fine(x)      = a sum of FINE_TERMS terms sin(w * p + phase), p a standardized random linear
                   combination of FINE_WIDTH covariates, w in FINE_FREQ; the same signs and weights; the
                   sum rescaled to sd in FINE_SD
    f(x, a)      = coarse + fine + c_a, the intercept c_a set so group a's mean probability is its drawn
                   base rate (BASE_RATE[a])

All draws come from one 128-bit entropy (`LABEL_ENTROPY`); it lives only in this file, which agent code
never sees, so the terms, coefficients and thresholds cannot be regenerated. The true probabilities
make the Bayes-optimal fair rule known exactly (benchmarks/oracle_fairness.py: `truth()`). One seeded
split, stratified by (y, a): train 60%, val 20%, test 20%. Row ids are a seeded relabelling. Layout
written under --out:

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

# fixed: changing it changes the task (bump the version)
LABEL_ENTROPY = 0xD6BA_EF53_928A_B8D1_4017_6F9D_0800_1A19
SPLIT_SEED = 20261124
AGE_THRESHOLD = 32  # a = 1 for age >= 32
FRACTIONS = (0.6, 0.2, 0.2)
FEATURES = ["rate_marriage", "age", "yrs_married", "children", "religious", "educ", "occupation",
            "occupation_husb"]
COARSE_KINDS = ("linear", "interaction", "step", "group")
COARSE_TERMS = (3, 5)  # inclusive
COARSE_SD = (1.0, 1.5)
FINE_TERMS = (3, 5)  # inclusive
FINE_WIDTH = (3, 5)  # covariates per projection, inclusive
FINE_FREQ = (3.5, 5.5)
FINE_SD = (2.5, 3.5)
BASE_RATE = ((0.25, 0.35), (0.35, 0.45))  # range of each group's mean probability (a = 0, a = 1)
FLOAT_FORMAT = "%.6g"


def load() -> pd.DataFrame:
    from statsmodels.datasets import fair

    raw = fair.load_pandas().data
    frame = raw[FEATURES].copy()
    frame["a"] = (raw["age"] >= AGE_THRESHOLD).astype(int)
    return frame.reset_index(drop=True)


def _signed(rng: np.random.Generator, values: np.ndarray) -> np.ndarray:
    """A term centred, scaled to unit sd, times a random sign and weight (0 if the term is constant)."""
    scale = values.std()
    if scale == 0:
        return np.zeros(len(values))
    return rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 1.5) * (values - values.mean()) / scale


def coarse_term(rng: np.random.Generator, kind: str, z: np.ndarray, a: np.ndarray) -> np.ndarray:
    d = z.shape[1]
    if kind == "linear":
        return z[:, rng.integers(d)]
    if kind == "interaction":
        j, k = rng.choice(d, size=2, replace=False)
        return z[:, j] * z[:, k]
    if kind == "step":
        j = rng.integers(d)
        return (z[:, j] > np.quantile(z[:, j], rng.uniform(0.2, 0.8))).astype(float)
    inner = coarse_term(rng, str(rng.choice(COARSE_KINDS[:3])), z, a)  # "group": acts in one group only
    return inner * (a == rng.integers(2))


def fine_term(rng: np.random.Generator, z: np.ndarray) -> np.ndarray:
    subset = rng.choice(z.shape[1], size=rng.integers(FINE_WIDTH[0], FINE_WIDTH[1] + 1), replace=False)
    proj = z[:, subset] @ rng.normal(size=len(subset))
    proj = (proj - proj.mean()) / proj.std()
    return np.sin(rng.uniform(*FINE_FREQ) * proj + rng.uniform(0, 2 * np.pi))


def _rescaled(total: np.ndarray, sd: float) -> np.ndarray:
    return total / total.std() * sd if total.std() > 0 else total


def intercept(f: np.ndarray, rate: float) -> float:
    """c with mean(sigmoid(f + c)) = rate (bisection; the mean is increasing in c)."""
    lo, hi = -20.0, 20.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if np.mean(1.0 / (1.0 + np.exp(-(f + mid)))) < rate:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def draw_probability(rng: np.random.Generator, x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """P(y = 1 | x, a) for every row under one freshly drawn member of the family."""
    z = (x - x.mean(0)) / x.std(0)
    coarse = np.zeros(len(z))
    for kind in rng.choice(COARSE_KINDS, size=rng.integers(COARSE_TERMS[0], COARSE_TERMS[1] + 1)):
        coarse += _signed(rng, coarse_term(rng, str(kind), z, a))
    fine = np.zeros(len(z))
    for _ in range(rng.integers(FINE_TERMS[0], FINE_TERMS[1] + 1)):
        fine += _signed(rng, fine_term(rng, z))
    f = _rescaled(coarse, rng.uniform(*COARSE_SD)) + _rescaled(fine, rng.uniform(*FINE_SD))
    for g in (0, 1):
        rows = a == g
        f[rows] += intercept(f[rows], rng.uniform(*BASE_RATE[g]))
    return 1.0 / (1.0 + np.exp(-f))


def truth() -> pd.DataFrame:
    """Every row: id, the features, a, the true probability p and the drawn label y (the labels' model)."""
    frame = load()
    label_seq, = np.random.SeedSequence(LABEL_ENTROPY).spawn(1)
    rng = np.random.default_rng(label_seq)
    p = draw_probability(rng, frame[FEATURES].to_numpy(dtype=float), frame["a"].to_numpy())
    frame["y"] = (rng.random(len(frame)) < p).astype(int)
    frame["p"] = p
    frame.insert(0, "id", np.random.default_rng(SPLIT_SEED + 1).permutation(len(frame)))
    return frame


def split(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SPLIT_SEED)
    parts: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": []}
    for _, group in frame.groupby(["y", "a"], sort=True):
        idx = rng.permutation(group.index.to_numpy())
        n_train, n_test = round(FRACTIONS[0] * len(idx)), round(FRACTIONS[2] * len(idx))
        n_val = len(idx) - n_train - n_test  # the rounding remainder goes to val (since 4.0.0; it went to test)
        parts["train"].append(idx[:n_train])
        parts["val"].append(idx[n_train:n_train + n_val])
        parts["test"].append(idx[n_train + n_val:])
    return {name: np.sort(np.concatenate(chunks)) for name, chunks in parts.items()}


def build(out: Path) -> None:
    frame = truth()
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
