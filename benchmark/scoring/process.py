"""FML-bench's 12 process-level metrics of one run, each in FML-bench's exact form and, where that form
is flawed, a corrected one beside it (named `*_fml` and the corrected name; docs/metrics.md has both).

FML-bench's `val_steps` are our executed search nodes (the baseline excluded) in the order their
results arrived; a failed or no-op edit runs no experiment here, so it is not a val step.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from researchbench.benchmark.records.journal import BASELINE_ID, Node
from researchbench.benchmark.scoring.normalize import NAN, fml_ni
from researchbench.benchmark.scoring.ranges import NIRange
from researchbench.benchmark.scoring.runs import RunRecord, is_ok

FIRST_IMPROVEMENT_EPS = 1e-15  # FML-bench's thresholds, kept as they are
LATE_GAIN_EPS = 1e-12
UNIQUENESS_DISTANCE = 0.015  # cosine distance threshold of FML-bench's agglomerative clustering
ZERO_NORM = 1e-8  # FML-bench: an embedding whose norm is at most this is a zero vector


def improvement_curve(run: RunRecord, rng: NIRange | None) -> list[float]:
    """ic_k = sign * (best_so_far_k - baseline_val) / |p_best - p_worst| after each val step (FML-bench).

    Values pass through the range's transform first; a step whose value is not finite there (or that
    the transform rejects) leaves best-so-far unchanged, as FML-bench skips infinite step metrics.
    """
    baseline = rng.shown(run.score("baseline", "val")) if rng is not None else None
    if baseline is None or rng.span(baseline) == 0:
        return [NAN] * len(run.experiments)
    sign, denom = (1 if rng.direction == "higher" else -1), rng.span(baseline)
    best, curve = baseline, []
    for node in run.experiments:
        value = rng.shown(node.primary) if is_ok(node) else None
        if value is not None and sign * (value - best) > 0:
            best = value
        curve.append(sign * (best - baseline) / denom)
    return curve


def efficiency(run: RunRecord, rng: NIRange | None) -> dict[str, float]:
    """AUC over steps (over K, as FML-bench, and over the budget), first-improvement, late-gain, best step."""
    curve = improvement_curve(run, rng)
    k = len(curve)
    budget = max(run.budget_steps, k)
    out = {"auc_fml": NAN, "auc_budget": NAN, "first_improvement_step": NAN, "late_gain_fml": NAN,
           "best_step_fml": NAN, "best_step": NAN}
    if k and not math.isnan(curve[0]):
        out["auc_fml"] = sum(curve) / k
        out["auc_budget"] = sum(curve) / budget  # steps never run count as no improvement
        out["first_improvement_step"] = next((i + 1 for i, v in enumerate(curve) if v > FIRST_IMPROVEMENT_EPS), NAN)
        if curve[-1] > LATE_GAIN_EPS:  # K=1 reads ic[-1], as FML-bench does
            out["late_gain_fml"] = (curve[-1] - curve[k // 2 - 1]) / curve[-1]
    best_val = run.score("best", "val")
    steps = run.experiments
    if best_val is not None:  # FML-bench: the LAST step whose metric equals the best value (float equality)
        out["best_step_fml"] = next((i + 1 for i in range(k - 1, -1, -1)
                                     if is_ok(steps[i]) and steps[i].primary == best_val), NAN)
    best = run.best  # ours: where the node the run chose as best actually is
    out["best_step"] = next((i + 1 for i, n in enumerate(steps) if best is not None and n.id == best.id), NAN)
    return out


def generalization(run: RunRecord, rng: NIRange | None) -> float:
    """|NI(best val vs baseline val) - NI(test vs baseline test)|, FML-bench's val-test gap."""
    base_val, base_test = run.score("baseline", "val"), run.score("baseline", "test")
    best_val = run.score("best", "val")
    best_val = base_val if best_val is None else best_val  # all val failed: val = baseline val
    test = run.score("best", "test")
    return abs(fml_ni(rng, best_val, base_val) - fml_ni(rng, test, base_test))


def reliability(run: RunRecord) -> dict[str, float]:
    """Valid step ratio over val steps (FML-bench), and over every step the agent took (failed edits too)."""
    steps = run.experiments
    attempts = [n for n in run.nodes if n.id != BASELINE_ID]
    ok = sum(is_ok(n) for n in steps)
    return {"valid_step_ratio": ok / len(steps) if steps else NAN,
            "valid_attempt_ratio": ok / len(attempts) if attempts else NAN}


def cost(run: RunRecord) -> dict[str, float]:
    used = run.summary.budget.used
    tokens, usd = (float(used.tokens or 0), used.usd or 0.0) if used else (0.0, 0.0)
    return {"tokens_m": tokens / 1e6, "usd": usd, "wall_h": (run.summary.wall_seconds or 0.0) / 3600}


def exploration(embeddings: np.ndarray, baseline: np.ndarray | None) -> dict[str, float]:
    """Spread, uniqueness, reach and effective dimension of the step embeddings [N, d] (FML-bench's formulas)."""
    out = {"spread": NAN, "uniqueness": NAN, "reach": NAN, "effective_dim": NAN}
    n = len(embeddings)
    if n == 0:
        return out
    e32 = embeddings.astype(np.float32)
    out["spread"] = float(np.mean(np.linalg.norm(e32 - e32.mean(axis=0), axis=1)))
    out["uniqueness"] = _clusters(embeddings) / n
    if baseline is not None:
        out["reach"] = float(np.max(np.linalg.norm(embeddings.astype(np.float64) - baseline.astype(np.float64),
                                                   axis=1)))
    if n < 2:
        out["effective_dim"] = 0.0
    else:
        s = np.linalg.svd(embeddings - embeddings.mean(axis=0), compute_uv=False)
        lam = s ** 2 / (n - 1)
        out["effective_dim"] = float(lam.sum() ** 2 / (lam ** 2).sum()) if (lam ** 2).sum() > 0 else 0.0
    return out


def _clusters(embeddings: np.ndarray) -> int:
    """FML-bench's cluster count: float32 vectors, norms at most ZERO_NORM form one extra cluster."""
    e32 = embeddings.astype(np.float32)
    norms = np.linalg.norm(e32, axis=1)
    valid = e32[norms > ZERO_NORM]
    zero = int((norms <= ZERO_NORM).any())
    if len(valid) < 2:
        return len(valid) + zero
    from sklearn.cluster import AgglomerativeClustering

    model = AgglomerativeClustering(n_clusters=None, metric="cosine", linkage="average",
                                    distance_threshold=UNIQUENESS_DISTANCE)
    return int(model.fit(valid).n_clusters_) + zero


def snapshot_text(files: dict[str, str]) -> str:
    """A snapshot as FML-bench embeds it: the files in sorted path order, joined by newlines, no banners."""
    return "\n".join(files[rel] for rel in sorted(files))


def process_metrics(run: RunRecord, embedded: dict[str, tuple[np.ndarray, np.ndarray | None]] | None,
                    rng: NIRange | None) -> dict[str, Any]:
    """All 12 metrics (and their corrected variants) of one run.

    `embedded` maps a pooling name ("fml" = sum of chunk CLS vectors, "mean" = their mean) to
    (step embeddings [N, d], baseline embedding); None leaves the exploration metrics NaN.
    """
    row: dict[str, Any] = {}
    for pooling in ("fml", "mean"):
        values = exploration(*embedded[pooling]) if embedded else dict.fromkeys(
            ("spread", "uniqueness", "reach", "effective_dim"), NAN)
        row.update({f"{name}_{pooling}": v for name, v in values.items()})
    row["val_test_gap"] = generalization(run, rng)
    row.update(reliability(run))
    row.update(efficiency(run, rng))
    row.update(cost(run))
    return row


def step_nodes(run: RunRecord) -> list[Node]:
    """The nodes whose snapshots the exploration metrics embed."""
    return run.experiments
