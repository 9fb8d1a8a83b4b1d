"""The reference solution (task.yaml's rationale; not shown to agents): diagnose each dataset's SEM, screen
each variable's candidate parents, then find the best-scoring DAG over those candidates exactly, by dynamic
programming over variable orders.

Diagnosis:
  * when flexible fits (splines of each parent and pairwise products) beat linear ones by BIC (the best
    DAG over the screened candidates under each), a nonlinear SEM with Gaussian noise (an additive-noise
    model);
  * else linear, with non-Gaussian noise when the residuals of the linear regressions of the variables on
    all the others fail the Jarque-Bera test (p < JB_LEVEL) for more than JB_SHARE of the variables
    (Gaussian noise: about 1 in 100 would), else with Gaussian noise.
Candidates: each variable's CANDIDATES others chosen by forward selection of whole variable blocks (the
variable's flexible columns) on one Gram matrix; the candidate relation is made symmetric before the
search is restricted to it (a parent must be a candidate of its child).
Score per variable given a parent set (with the usual BIC penalty, log(n)/2 per coefficient):
  * linear SEMs: n x the differential entropy of the least-squares residual (Hyvarinen's 1998
    maximum-entropy approximation), a likelihood that orients edges when the noise is not Gaussian;
  * nonlinear SEMs: the Gaussian log-likelihood of a least-squares fit on each parent's (x, x^2, cubic
    hinges at 4 quantiles) and the parents' pairwise products, at most MAX_PARENTS_NONLINEAR parents,
    PENALTY_NONLINEAR x the BIC penalty.
The search: each variable's best parent set within every subset of its candidates (2^CANDIDATES), then the
best order by dynamic programming over all 2^d subsets of variables (Silander & Myllymaki 2006), one
popcount layer at a time in numpy: exact for the candidate-restricted score, about 2 s for 20 variables.

    python benchmarks/task_baseline.py causal_discovery --seeds 0 --overlay ml_tasks/causal_discovery/reference
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy import stats

JB_LEVEL, JB_SHARE = 0.01, 0.25
KNOTS = 4
CANDIDATES = 8  # screened candidate parents per variable (the search covers every subset of them)
MAX_PARENTS_LINEAR = 6
MAX_PARENTS_NONLINEAR = 4
PENALTY_NONLINEAR = 0.5
# Hyvarinen (1998): H(u) ~ H(gauss) - K1 (E log cosh u - GAMMA)^2 - K2 (E u exp(-u^2/2))^2 for standardized u
K1, K2, GAMMA = 79.047, 7.4129, 0.37457
H_GAUSS = 0.5 * (1 + np.log(2 * np.pi))


def entropy(residual: np.ndarray) -> float:
    sd = residual.std()
    u = (residual - residual.mean()) / sd
    return float(np.log(sd) + H_GAUSS - K1 * (np.mean(np.logaddexp(u, -u) - np.log(2)) - GAMMA) ** 2
                 - K2 * np.mean(u * np.exp(-u ** 2 / 2)) ** 2)


def flexible_design(x: np.ndarray) -> tuple[np.ndarray, dict[int, list[int]], dict[tuple[int, int], int]]:
    """Columns: intercept; per variable x, x^2 and cubic hinges; per pair the product (x centred)."""
    n, d = x.shape
    blocks = []
    for i in range(d):
        v = x[:, i]
        knots = np.quantile(v, np.linspace(0, 1, KNOTS + 2)[1:-1])
        blocks.append(np.column_stack([v, v ** 2] + [np.maximum(v - k, 0) ** 3 for k in knots]))
    width = blocks[0].shape[1]
    pairs = list(combinations(range(d), 2))
    design = np.hstack([np.ones((n, 1))] + blocks + [np.column_stack([x[:, i] * x[:, k] for i, k in pairs])])
    design[:, 1:] -= design[:, 1:].mean(axis=0)
    design[:, 1:] /= np.maximum(design[:, 1:].std(axis=0), 1e-12)
    block = {i: list(1 + i * width + np.arange(width)) for i in range(d)}
    pair = {p: 1 + d * width + m for m, p in enumerate(pairs)}
    return design, block, pair


def flexible_columns(block, pair):
    return lambda s: [0] + [c for i in s for c in block[i]] + [pair[p] for p in combinations(sorted(s), 2)]


def linear_columns(s):
    return [0] + [1 + i for i in s]


class Fits:
    """Least-squares fits of x_j on design columns, all from one Gram matrix."""

    def __init__(self, x: np.ndarray, design: np.ndarray):
        self.x, self.design, self.n = x, design, len(x)
        self.gram, self.cross = design.T @ design, design.T @ x

    def coef(self, j: int, idx: list[int]) -> np.ndarray:
        g = self.gram[np.ix_(idx, idx)]
        return np.linalg.solve(g + 1e-8 * np.trace(g) / len(idx) * np.eye(len(idx)), self.cross[idx, j])

    def rss(self, j: int, idx: list[int]) -> float:
        y = self.x[:, j]
        return max(float(y @ y) - float(self.coef(j, idx) @ self.cross[idx, j]), 1e-12)

    def residual(self, j: int, idx: list[int]) -> np.ndarray:
        return self.x[:, j] - self.design[:, idx] @ self.coef(j, idx)


def screen(fits: Fits, columns, d: int) -> list[list[int]]:
    """Per variable, up to CANDIDATES others added greedily (largest RSS drop of the variable's block)."""
    chosen = []
    for j in range(d):
        picked: list[int] = []
        others = [i for i in range(d) if i != j]
        for _ in range(min(CANDIDATES, d - 1)):
            best = min((i for i in others if i not in picked), key=lambda i: fits.rss(j, columns(picked + [i])))
            picked.append(best)
        chosen.append(picked)
    return chosen


def candidate_sets(chosen: list[list[int]], d: int) -> list[list[int]]:
    """Symmetric candidate relation, each variable's list cut to the CANDIDATES strongest (earliest picked)."""
    rank = np.full((d, d), np.inf)
    for j, picked in enumerate(chosen):
        for r, i in enumerate(picked):
            rank[j, i] = r
    both = np.minimum(rank, rank.T)
    return [sorted(int(i) for i in np.argsort(both[j], kind="stable")[:CANDIDATES] if np.isfinite(both[j, i]))
            for j in range(d)]


def local_scores(fits: Fits, cands: list[list[int]], columns, limit: int, penalty: float | None
                 ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per variable j: best[m] / arg[m] = the best score and parent bitmask (over all variables) of j with
    parents inside the subset m of its candidate list (m indexes cands[j]'s bits), at most `limit` parents.
    penalty None: the entropy score (BIC penalty); else the Gaussian score with penalty x the BIC penalty."""
    n = fits.n
    out = []
    for j, cand in enumerate(cands):
        k = len(cand)
        raw = np.full(1 << k, np.inf)
        for r in range(min(limit, k) + 1):
            for sub in combinations(range(k), r):
                idx = columns([cand[b] for b in sub])
                if penalty is not None:
                    value = n / 2 * np.log(fits.rss(j, idx) / n) + penalty * len(idx) * np.log(n) / 2
                else:
                    value = n * entropy(fits.residual(j, idx)) + len(idx) * np.log(n) / 2
                raw[sum(1 << b for b in sub)] = value
        best, arg = raw.copy(), np.arange(1 << k)
        for b in range(k):  # subset minimum: best[m] = min over subsets of m
            has = (np.arange(1 << k) >> b) & 1 == 1
            without = np.arange(1 << k)[has] ^ (1 << b)
            better = best[without] < best[has]
            best[np.flatnonzero(has)[better]] = best[without[better]]
            arg[np.flatnonzero(has)[better]] = arg[without[better]]
        masks = np.array([sum(1 << cand[b] for b in range(k) if m >> b & 1) for m in range(1 << k)], dtype=np.int64)
        out.append((best, masks[arg]))
    return out


def best_dag(scores, cands: list[list[int]], d: int) -> tuple[np.ndarray, float]:
    """The DAG minimising the sum of local scores over candidate-restricted parent sets (exact DP)."""
    full = 1 << d
    every = np.arange(full, dtype=np.int64)
    popcount = np.zeros(full, dtype=np.int64)
    for b in range(d):
        popcount += (every >> b) & 1
    local = []
    for j in range(d):  # compressed index of (subset & candidates of j) into j's table
        comp = np.zeros(full, dtype=np.int64)
        for b, i in enumerate(cands[j]):
            comp |= ((every >> i) & 1) << b
        local.append(scores[j][0][comp])
    total = np.full(full, np.inf)
    total[0] = 0.0
    sink = np.zeros(full, dtype=np.int64)
    order = np.argsort(popcount, kind="stable")
    bounds = np.searchsorted(popcount[order], np.arange(d + 2))
    for size in range(1, d + 1):
        layer = order[bounds[size]:bounds[size + 1]]
        for j in range(d):
            sub = layer[(layer >> j) & 1 == 1]
            value = total[sub ^ (1 << j)] + local[j][sub ^ (1 << j)]
            better = value < total[sub]
            total[sub[better]] = value[better]
            sink[sub[better]] = j
    graph = np.zeros((d, d), dtype=int)
    subset = full - 1
    while subset:
        j = int(sink[subset])
        subset ^= 1 << j
        comp = sum(1 << b for b, i in enumerate(cands[j]) if subset >> i & 1)
        parents = int(scores[j][1][comp])
        graph[[i for i in range(d) if parents >> i & 1], j] = 1
    return graph, float(total[full - 1])


def non_gaussian_share(fits: Fits, d: int) -> float:
    """Share of variables whose residual on all the others (linear fit) fails the Jarque-Bera test."""
    return float(np.mean([stats.jarque_bera(fits.residual(j, linear_columns([i for i in range(d) if i != j]))).pvalue
                          < JB_LEVEL for j in range(d)]))


def analyse(x: np.ndarray):
    """(kind, fits, columns, candidates): the diagnosis (module docstring) and what the search needs."""
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    d = x.shape[1]
    design, block, pair = flexible_design(x)
    flexible = Fits(x, design)
    linear = Fits(x, np.column_stack([np.ones(len(x)), x]))
    flex_cols = flexible_columns(block, pair)
    # screening on the variables' blocks only (no pair terms): candidates for both scores
    cands = candidate_sets(screen(flexible, lambda s: [0] + [c for i in s for c in block[i]], d), d)
    gauss_linear = local_scores(linear, cands, linear_columns, MAX_PARENTS_LINEAR, 1.0)
    gauss_flexible = local_scores(flexible, cands, flex_cols, MAX_PARENTS_NONLINEAR - 1, 1.0)
    if best_dag(gauss_flexible, cands, d)[1] < best_dag(gauss_linear, cands, d)[1]:
        return "nonlinear", flexible, flex_cols, cands
    if non_gaussian_share(linear, d) > JB_SHARE:
        return "linear-nongaussian", linear, linear_columns, cands
    return "linear-gaussian", linear, linear_columns, cands


def diagnose(x: np.ndarray) -> str:
    """'linear-nongaussian', 'nonlinear' or 'linear-gaussian' (the module docstring's three cases)."""
    return analyse(x)[0]


def discover(x: np.ndarray, params: dict) -> np.ndarray:
    kind, fits, columns, cands = analyse(x)
    if kind == "nonlinear":
        scores = local_scores(fits, cands, columns, MAX_PARENTS_NONLINEAR, PENALTY_NONLINEAR)
    else:
        scores = local_scores(fits, cands, columns, MAX_PARENTS_LINEAR, None)
    return best_dag(scores, cands, x.shape[1])[0]
