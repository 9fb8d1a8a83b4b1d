"""FARBench's six capability diagnostics and a regime per run (as the FARBench paper defines them).

A run's evaluations are its executed search nodes in arrival order, scored by their validation
metric (what the agent saw) on the task's floor/target scale. Time fraction of evaluation i:
tau_i = max(i / I, e_i / H), each clipped to [0, 1], with I the experiment budget and e_i the summed
experiment seconds so far against H, the compute budget in seconds (both CPU seconds where the run's
limits were CPU time, benchmark/run/budget.py).

Our manifests record floor and target on the hidden test only, so validation scores are placed on
test-scale anchors; the columns that depend on them carry ON_TEST_ANCHORS in their names (IF and CES
do not depend on them).
"""

from __future__ import annotations

from typing import Any

from researchbench.benchmark.executors.base import charged_seconds
from researchbench.benchmark.scoring.normalize import achievement
from researchbench.benchmark.scoring.runs import RunRecord, is_ok

EPS = 1e-12
REGIMES = ("productive", "early_plateau", "stuck_low", "scored_zero", "never_enters_loop")
ON_TEST_ANCHORS = " (val on test anchors)"
FA, HG, PE, PASS, BEST, REGIME = (name + ON_TEST_ANCHORS for name in ("FA", "HG", "PE", "pass@0.5", "b", "regime"))


def diagnostics(run: RunRecord) -> dict[str, Any]:
    """IF, CES, FA, HG, PE, Pass@0.5, the best clipped achievement b and the regime of one run (the
    anchor-dependent ones named with ON_TEST_ANCHORS)."""
    steps = run.experiments
    limit_i = max(run.budget_steps, 1)
    limit_s = (run.summary.budget.limits.compute_hours or 0.0) * 3600
    elapsed, taus, scores = 0.0, [], []
    for i, node in enumerate(steps, 1):
        elapsed += charged_seconds(float(node.seconds or 0.0), node.cpu_seconds, node.clock)
        tau = max(min(i / limit_i, 1.0), min(elapsed / limit_s, 1.0) if limit_s > 0 else 0.0)
        if is_ok(node):
            taus.append(tau)
            scores.append(achievement(run.metric, node.primary))
    ran_clean = sum(1 for n in steps if n.exit_code == 0 and not n.timed_out)
    ces = ran_clean / len(steps) if steps else 0.0
    if not scores:
        return {"IF": 0.0, "CES": ces, FA: 0.0, HG: 0.0, PE: 0.0, PASS: 0, BEST: 0.0, REGIME: "never_enters_loop"}
    first, best = scores[0], max(scores)
    hg = min(max((best - first) / max(1 - first, EPS), 0.0), 1.0)
    pe, prev_tau, running = 0.0, 0.0, 0.0
    for tau, score in zip(taus, scores):
        pe += (tau - prev_tau) * running  # left-continuous: the new best counts from its own tau on
        prev_tau, running = tau, max(running, score)
    pe += (1 - prev_tau) * running
    return {"IF": 1 - taus[0], "CES": ces, FA: first, HG: hg, PE: pe, PASS: int(best >= 0.5), BEST: best,
            REGIME: regime(best, hg)}


def regime(best: float, hg: float) -> str:
    """One of FARBench's five regimes, by the thresholds of its failure-mode classifier (0.5, 0.1, 1e-12).

    Never entering the loop (no valid evaluation) is decided by the caller; then: a best of zero is
    'scored_zero'; below 0.5 'stuck_low'; at or above 0.5 with a head gain under 0.1 (feedback did
    not lift the first result) 'early_plateau'; otherwise 'productive'.
    """
    if best <= EPS:
        return "scored_zero"
    if best < 0.5:
        return "stuck_low"
    if hg < 0.1:
        return "early_plateau"
    return "productive"
