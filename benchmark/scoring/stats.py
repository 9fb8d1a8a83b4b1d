"""Statistics that keep comparisons honest: mean and SEM over seeds, bootstrap CIs, paired comparisons,
FARBench's domain-balanced aggregate. Pure numpy; deterministic (fixed bootstrap seed)."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 0


def finite(values: Sequence[float]) -> np.ndarray:
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    return arr[np.isfinite(arr)]


def mean_sem(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (NaN SEM below two values)."""
    arr = finite(values)
    if not len(arr):
        return math.nan, math.nan
    sem = float(arr.std(ddof=1) / math.sqrt(len(arr))) if len(arr) > 1 else math.nan
    return float(arr.mean()), sem


def bootstrap_ci(values: Sequence[float], level: float = 0.95, samples: int = BOOTSTRAP_SAMPLES,
                 seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean; NaN below two values (one seed says nothing about spread)."""
    arr = finite(values)
    if len(arr) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, len(arr), size=(samples, len(arr)))].mean(axis=1)
    tail = (1 - level) / 2
    return float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))


def paired(a: dict[tuple, float], b: dict[tuple, float]) -> dict[str, float]:
    """Compare two agents on the keys (task, seed) both have: mean of a - b, its bootstrap CI, and a's
    win rate (ties count half). Keys present for only one side are left out, never imputed."""
    shared = sorted(k for k in a.keys() & b.keys() if math.isfinite(a[k]) and math.isfinite(b[k]))
    diffs = np.array([a[k] - b[k] for k in shared], dtype=float)
    if not len(diffs):
        return {"pairs": 0, "mean_diff": math.nan, "ci_low": math.nan, "ci_high": math.nan, "win_rate": math.nan}
    low, high = bootstrap_ci(diffs)
    wins = float(np.mean(np.where(diffs > 0, 1.0, np.where(diffs < 0, 0.0, 0.5))))
    return {"pairs": len(diffs), "mean_diff": float(diffs.mean()), "ci_low": low, "ci_high": high, "win_rate": wins}


def domain_balanced(scores: dict[str, float], domains: dict[str, str], tasks: Sequence[str]) -> dict[str, float]:
    """FARBench's aggregate: DomainScore_d = 100 * sum of A over the domain's tasks / |T_d| (a missing task
    counts 0, |T_d| fixed by `tasks`), Score = mean over domains. `scores` maps task -> achievement."""
    by_domain: dict[str, list[str]] = {}
    for task in tasks:
        by_domain.setdefault(domains.get(task, "unknown"), []).append(task)
    out = {f"domain:{d}": 100 * sum(scores.get(t, 0.0) if math.isfinite(scores.get(t, 0.0)) else 0.0 for t in ts)
           / len(ts) for d, ts in sorted(by_domain.items())}
    out["FARBench score"] = float(np.mean(list(out.values()))) if out else math.nan
    return out
