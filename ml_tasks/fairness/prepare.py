"""Write the fairness task's data: Fair's (1978) survey covariates with labels drawn from a hidden model.

Run by `researchbench.benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/fairness>

The covariates are real: 6366 married women answered a Redbook survey (shipped offline by statsmodels);
sensitive attribute `a` = 1 for women aged 32 or older (39% of rows). The label is not the survey's
answer: `y ~ Bernoulli(sigmoid(f(x, a)))`. Since version 5.0.0 the description says only that `f` is a
hidden nonlinear model of the covariates with interactions and terms acting in one group; its form lives
here alone (4.0.0 documented its family, and a strong agent fitted that family's terms directly). `f` is
drawn once, from one 128-bit entropy (`LABEL_ENTROPY`), as a random mix of term kinds over z (the 8
covariates, each standardized over all rows):

    coarse(x, a) = COARSE_TERMS terms, each of a kind drawn from COARSE_KINDS: a monotone (tanh) transform
                   of one covariate, random effects per level of one covariate or per cell of two, a
                   pairwise product, a conjunction of 2-3 thresholds, the sign pattern of 2-3 thresholds,
                   a smooth ridge (slow sine, tanh or bump) of a random projection of 2-5 covariates, a
                   radial bump in 2-3 covariates; the sum rescaled to sd in COARSE_SD
    fine(x, a)   = FINE_TERMS terms, of a kind drawn from FINE_KINDS with FINE_P: a product of centred
                   random per-level functions of 3-4 covariates (a pure high-order interaction, no main
                   effects), a radial wave sin(w r + phase) around a random centre in 3-5 covariates,
                   a product of 3-4 soft oblique cuts, random values on the cells of a random Voronoi
                   partition of 4-6 covariates (20-59 cells), a periodic ridge of random shape (sine,
                   triangle, rounded square, sawtooth) of a projection of 3-5 covariates; w in FINE_FREQ;
                   the sum rescaled to sd in FINE_SD
    f(x, a)      = coarse + fine + c_a, the intercept c_a set so group a's mean probability is its drawn
                   base rate (BASE_RATE[a])

Every term is centred and scaled to unit sd, acts in one group only (times a or 1 - a) with probability
GROUP_P, and enters with a random sign and a weight in WEIGHT. The entropy lives only in this file, which
agent code never sees, so the terms cannot be regenerated. The true probabilities make the Bayes-optimal
fair rule known exactly (benchmarks/oracle_fairness.py: `truth()`); `draw_model` also returns the drawn
terms themselves, so the oracle script can show that a method that finds them (their weights refitted on
the training rows) approaches that rule. One seeded split, stratified by (y, a): train 60%, val 20%,
test 20%. Row ids are a seeded relabelling. Layout written under --out:

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

# fixed: changing any of these changes the task (bump the version)
LABEL_ENTROPY = 0x9488_47B9_6985_6178_EDFC_856C_4A6A_D394
SPLIT_SEED = 20261124
AGE_THRESHOLD = 32  # a = 1 for age >= 32
FRACTIONS = (0.6, 0.2, 0.2)
FEATURES = ["rate_marriage", "age", "yrs_married", "children", "religious", "educ", "occupation",
            "occupation_husb"]
COARSE_KINDS = ("monotone", "level", "table", "product", "rule", "xor", "ridge", "bump")
COARSE_TERMS = (6, 10)  # inclusive
COARSE_SD = (1.0, 1.5)
FINE_KINDS = ("tensor", "ring", "oblique", "voronoi", "wave")
FINE_P = (0.5, 0.125, 0.125, 0.125, 0.125)
FINE_TERMS = (7, 12)  # inclusive
FINE_SD = (2.5, 3.5)
FINE_FREQ = (3.0, 6.0)
GROUP_P = 0.3
WEIGHT = (0.3, 1.5)
BASE_RATE = ((0.25, 0.35), (0.35, 0.45))  # range of each group's mean probability (a = 0, a = 1)
FLOAT_FORMAT = "%.6g"


def load() -> pd.DataFrame:
    from statsmodels.datasets import fair

    raw = fair.load_pandas().data
    frame = raw[FEATURES].copy()
    frame["a"] = (raw["age"] >= AGE_THRESHOLD).astype(int)
    return frame.reset_index(drop=True)


def _unit(values: np.ndarray) -> np.ndarray:
    """Centred and scaled to unit sd (0 if constant)."""
    scale = values.std()
    return np.zeros(len(values)) if scale == 0 else (values - values.mean()) / scale


def _codes(column: np.ndarray) -> np.ndarray:
    return np.unique(column, return_inverse=True)[1]


def _cut(rng: np.random.Generator, column: np.ndarray) -> float:
    return float(np.quantile(column, rng.uniform(0.15, 0.85)))


def _projection(rng: np.random.Generator, z: np.ndarray, low: int, high: int) -> np.ndarray:
    """A standardized random linear combination of low..high-1 covariates."""
    cols = rng.choice(z.shape[1], size=rng.integers(low, high), replace=False)
    return _unit(z[:, cols] @ rng.normal(size=len(cols)))


def term(rng: np.random.Generator, kind: str, z: np.ndarray) -> np.ndarray:
    """One freshly drawn term of the given kind, evaluated on every row."""
    n, d = z.shape
    if kind == "monotone":
        j = rng.integers(d)
        return np.tanh(rng.uniform(0.3, 2.0) * (z[:, j] - rng.normal(0, 0.5)))
    if kind == "level":
        codes = _codes(z[:, rng.integers(d)])
        return rng.normal(size=codes.max() + 1)[codes]
    if kind == "table":
        j, k = rng.choice(d, size=2, replace=False)
        cj, ck = _codes(z[:, j]), _codes(z[:, k])
        return rng.normal(size=(cj.max() + 1, ck.max() + 1))[cj, ck]
    if kind == "product":
        j, k = rng.choice(d, size=2, replace=False)
        return z[:, j] * z[:, k]
    if kind == "rule":
        out = np.ones(n)
        for j in rng.choice(d, size=rng.integers(2, 4), replace=False):
            side = rng.choice([-1.0, 1.0])
            out *= side * (z[:, j] - _cut(rng, z[:, j])) > 0
        return out
    if kind == "xor":
        out = np.ones(n)
        for j in rng.choice(d, size=rng.integers(2, 4), replace=False):
            out *= np.where(z[:, j] > _cut(rng, z[:, j]), 1.0, -1.0)
        return out
    if kind == "ridge":
        t = _projection(rng, z, 2, 6)
        shape = rng.integers(3)
        if shape == 0:
            return np.sin(rng.uniform(1.5, 4.5) * t + rng.uniform(0, 2 * np.pi))
        if shape == 1:
            return np.tanh(rng.uniform(1.0, 4.0) * (t - rng.normal(0, 0.7)))
        return np.exp(-rng.uniform(0.5, 3.0) * (t - rng.normal(0, 0.8)) ** 2)
    if kind == "bump":
        cols = rng.choice(d, size=rng.integers(2, 4), replace=False)
        centre = z[rng.integers(n), cols]
        return np.exp(-np.sum((z[:, cols] - centre) ** 2, axis=1) / (2 * rng.uniform(0.4, 1.2) ** 2))
    if kind == "tensor":
        out = np.ones(n)
        for j in rng.choice(d, size=rng.integers(3, 5), replace=False):
            codes = _codes(z[:, j])
            out *= _unit(rng.normal(size=codes.max() + 1)[codes])
        return out
    if kind == "ring":
        cols = rng.choice(d, size=rng.integers(3, 6), replace=False)
        r = np.sqrt(np.sum((z[:, cols] - rng.normal(0, 0.7, size=len(cols))) ** 2, axis=1))
        return np.sin(rng.uniform(*FINE_FREQ) * r + rng.uniform(0, 2 * np.pi))
    if kind == "oblique":
        out = np.ones(n)
        for _ in range(rng.integers(3, 5)):
            out *= np.tanh(3 * (_projection(rng, z, 3, 6) - rng.normal(0, 0.5)))
        return out
    if kind == "voronoi":
        cols = rng.choice(d, size=rng.integers(4, 7), replace=False)
        k = rng.integers(20, 60)
        centres = z[rng.choice(n, size=k, replace=False)][:, cols] + rng.normal(0, 0.3, size=(k, len(cols)))
        scale = rng.uniform(0.5, 2.0, size=len(cols))
        dist = (((z[:, cols][:, None, :] - centres[None]) * scale) ** 2).sum(-1)
        return rng.normal(size=k)[np.argmin(dist, axis=1)]
    if kind == "wave":
        t = _projection(rng, z, 3, 6)
        u = (rng.uniform(*FINE_FREQ) * t / (2 * np.pi) + rng.uniform()) % 1.0
        shape = rng.integers(4)
        if shape == 0:
            return np.sin(2 * np.pi * u)
        if shape == 1:
            return np.abs(2 * u - 1)  # triangle
        if shape == 2:
            return np.tanh(4 * np.sin(2 * np.pi * u))  # rounded square
        return u  # sawtooth
    raise ValueError(kind)


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


def _part(rng: np.random.Generator, z: np.ndarray, a: np.ndarray, kinds, prob, count, terms: list):
    """The sum of `count` random terms (unit sd, random sign and weight), each appended to `terms`."""
    total = np.zeros(len(z))
    for _ in range(rng.integers(count[0], count[1] + 1)):
        kind = str(rng.choice(kinds, p=prob))
        values = term(rng, kind, z)
        if rng.random() < GROUP_P:
            group = int(rng.integers(2))
            values = values * (a == group)
            kind = f"{kind} (a={group} only)"
        weight = rng.choice([-1.0, 1.0]) * rng.uniform(*WEIGHT)
        total += weight * _unit(values)
        terms.append((kind, _unit(values)))
    return total


def draw_model(rng: np.random.Generator, x: np.ndarray, a: np.ndarray):
    """P(y = 1 | x, a) for every row under one freshly drawn model, and its terms [(kind, values)]."""
    z = (x - x.mean(0)) / x.std(0)
    terms: list = []
    coarse = _part(rng, z, a, COARSE_KINDS, None, COARSE_TERMS, terms)
    f = _unit(coarse) * rng.uniform(*COARSE_SD)
    fine = _part(rng, z, a, FINE_KINDS, FINE_P, FINE_TERMS, terms)
    f = f + _unit(fine) * rng.uniform(*FINE_SD)
    for g in (0, 1):
        rows = a == g
        f[rows] += intercept(f[rows], rng.uniform(*BASE_RATE[g]))
    return 1.0 / (1.0 + np.exp(-f)), terms


def draw_probability(rng: np.random.Generator, x: np.ndarray, a: np.ndarray) -> np.ndarray:
    return draw_model(rng, x, a)[0]


def truth(terms: list | None = None, entropy: int = LABEL_ENTROPY) -> pd.DataFrame:
    """Every row: id, the features, a, the true probability p and the drawn label y (the labels' model).

    `terms`, when given, receives the drawn terms [(kind, values over the rows)]; `entropy` other than the
    task's draws another member of the same generator (the oracle script's check of the design)."""
    frame = load()
    label_seq, = np.random.SeedSequence(entropy).spawn(1)
    rng = np.random.default_rng(label_seq)
    p, drawn = draw_model(rng, frame[FEATURES].to_numpy(dtype=float), frame["a"].to_numpy())
    if terms is not None:
        terms.extend(drawn)
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
