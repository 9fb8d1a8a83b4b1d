"""After the search: the best-validation node and the baseline run once on the hidden test set.

The test phase is the only one that sees the hidden test inputs; its results are stored in the
journal's `final` record, apart from the nodes, so no agent ever reads them.
"""

from __future__ import annotations

from typing import Any

from researchbench.benchmark.common.safefs import discard_tree
from researchbench.benchmark.records.journal import BASELINE_ID, OK, now
from researchbench.benchmark.records.kinds import Final
from researchbench.benchmark.run import display as show
from researchbench.benchmark.run.experiment import run_phase
from researchbench.benchmark.run.state import RunState



def final_test(run: RunState) -> Final:
    """Score the baseline and the best node on the hidden test set; returns the journal's final record."""
    best = run.store.best()
    baseline = run.store.get(BASELINE_ID)
    results: dict[str, Any] = {}
    for label, node in (("baseline", baseline), ("best", best)):
        if node is None or node.status != OK:
            results[label] = {"node": node.id if node else None, "primary": None, "error": "no valid node to test"}
            continue
        if label == "best" and node.id == baseline.id:
            results["best"] = dict(results["baseline"])
            continue
        key = f"test-{node.id}"
        run.display.job(key, f"{label} ({node.id})", show.FINAL_TEST)
        scratch = run.run_dir / "scratch" / key
        assert run.executor is not None, "the final test runs in a started run"
        outcome = run_phase(run.prepared, run.store.files(node), "test", run.executor, scratch,
                            run.budget.final_test_timeout_s(), run.seed)
        run.display.job_done(key)
        results[label] = {"node": node.id, "primary": outcome.primary, "metrics": outcome.metrics,
                          "error": outcome.bug_reason, "seconds": outcome.seconds, "cpu_seconds": outcome.cpu_seconds,
                          "clock": outcome.clock, "time_limit": outcome.time_limit,
                          "peak_open_files": outcome.peak_open_files,
                          "stdout": run.blobs.put(outcome.stdout), "stderr": run.blobs.put(outcome.stderr)}
    discard_tree(run.run_dir / "scratch")
    return Final(stop_reason=run.stop_reason, at=now(), baseline=results["baseline"], best=results["best"])
