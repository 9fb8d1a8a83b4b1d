"""Statistics that keep comparisons honest: mean and SEM over seeds, bootstrap CIs, paired comparisons and
the number of pairs they would need for 80% power, FARBench's domain-balanced aggregate. Deterministic
(fixed bootstrap seed); scipy is imported only for the power computation."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 0
POWER, ALPHA = 0.8, 0.05  # the detection a power analysis asks for: 80% power, two-sided alpha 0.05
MAX_PAIRS = 1 << 40  # past this a difference counts as undetectable
INCOMPLETE = "incomplete"


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
    """Compare two agents on the keys both have: n pairs, mean and SD of a - b, the mean's bootstrap CI,
    a's win rate (ties count half) and the pairs needed for 80% power. Keys present for only one side
    are left out, never imputed."""
    shared = sorted(k for k in a.keys() & b.keys() if math.isfinite(a[k]) and math.isfinite(b[k]))
    diffs = np.array([a[k] - b[k] for k in shared], dtype=float)
    if not len(diffs):
        return {"n": 0, "mean_diff": math.nan, "sd_diff": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                "win_rate": math.nan, "pairs_needed": math.nan}
    low, high = bootstrap_ci(diffs)
    wins = float(np.mean(np.where(diffs > 0, 1.0, np.where(diffs < 0, 0.0, 0.5))))
    return {"n": len(diffs), "mean_diff": float(diffs.mean()),
            "sd_diff": float(diffs.std(ddof=1)) if len(diffs) > 1 else math.nan, "ci_low": low, "ci_high": high,
            "win_rate": wins, "pairs_needed": pairs_for_power(diffs)}


def pairs_for_power(diffs: Sequence[float], power: float = POWER, alpha: float = ALPHA) -> float:
    """The fewest pairs with which a two-sided paired t-test at `alpha` detects the observed mean difference
    with probability `power`, taking the observed SD of the differences as the truth (the noncentral t, as
    statsmodels' TTestPower computes it, from scipy, which scikit-learn already installs: `--compare` needs
    no extra; the normal approximation only where that returns NaN, far out where the power is about 1).
    NaN below two differences (no SD); inf when the mean difference is 0; 2 when every difference is the
    same nonzero value."""
    arr = finite(diffs)
    if len(arr) < 2:
        return math.nan
    mean, sd = float(arr.mean()), float(arr.std(ddof=1))
    if mean == 0:
        return math.inf
    if sd == 0 or abs(mean) / sd > 1e6:  # no spread: the smallest sample a t-test can use
        return 2.0
    from scipy.stats import nct, norm, t

    effect = abs(mean) / sd

    def enough(n: int) -> bool:
        nc, df = effect * math.sqrt(n), n - 1
        value = float(nct.sf(t.isf(alpha / 2, df), df, nc) + nct.cdf(t.ppf(alpha / 2, df), df, nc))
        if math.isnan(value):  # the noncentral t loses precision far out (large d * sqrt(n)): normal approximation
            z = float(norm.ppf(1 - alpha / 2))
            value = float(norm.cdf(nc - z) + norm.cdf(-nc - z))
        return value >= power
    if enough(2):
        return 2.0
    low, high = 2, 4  # enough(low) is false; find a high that is enough, then bisect (power rises with n)
    while not enough(high):
        if high >= MAX_PAIRS:
            return math.inf
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return float(high)


def domain_balanced(scores: dict[str, float], domains: dict[str, str], tasks: Sequence[str],
                    missing_zero: bool = False) -> dict[str, float | str]:
    """FARBench's aggregate: DomainScore_d = 100 * sum of A over the domain's tasks / |T_d|, Score = mean over
    domains; `scores` maps task -> achievement, |T_d| is fixed by `tasks`. A domain with a task missing from
    `scores` is INCOMPLETE, and so is the score, unless `missing_zero` (FARBench's convention: it counts 0)."""
    by_domain: dict[str, list[str]] = {}
    for task in tasks:
        by_domain.setdefault(domains.get(task, "unknown"), []).append(task)
    out: dict[str, float | str] = {}
    for domain, ts in sorted(by_domain.items()):
        values = [scores.get(t, math.nan) for t in ts]
        if not missing_zero and any(not math.isfinite(v) for v in values):
            out[f"domain:{domain}"] = INCOMPLETE
        else:
            out[f"domain:{domain}"] = 100 * sum(v if math.isfinite(v) else 0.0 for v in values) / len(ts)
    numbers = [v for v in out.values() if not isinstance(v, str)]
    if len(numbers) < len(out):
        out["FARBench score"] = INCOMPLETE
    else:
        out["FARBench score"] = float(np.mean(numbers)) if numbers else math.nan
    return out
