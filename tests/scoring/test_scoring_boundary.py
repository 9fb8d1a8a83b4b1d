"""What reaches the journal the scorer reads: an evaluator's non-finite secondary metrics are left out at
the boundary where the harness reads its metrics JSON, with one feedback line on the node, and the node
(its primary score finite) stays a valid result."""

from __future__ import annotations

from pathlib import Path

from researchbench.benchmark.executors.local import LocalExecutor, LocalExecutorConfig
from researchbench.benchmark.records.journal import OK, BlobStore, Journal, Node
from researchbench.benchmark.records.kinds import Checkpoint, Finished
from researchbench.benchmark.run.display import Display
from conftest import MetricsAddedAfterEvaluation


def test_non_finite_secondary_metrics_never_reach_the_journal(toy, tmp_path: Path) -> None:
    from researchbench.benchmark.run.worker import StepRunner

    spec = toy.spec
    with LocalExecutor(LocalExecutorConfig()) as real:
        runner = StepRunner(toy, MetricsAddedAfterEvaluation(real, {"r2": float("nan"), "ratio": float("inf")}), BlobStore(tmp_path / "blobs"), spec.budget,
                            tmp_path / "scratch", Display(echo=lambda line: None, quiet=True))
        node = Node(id="0000", step=0, operator="baseline")
        files = {rel: data.decode() for rel, data in toy.baseline_files().items() if spec.is_editable(rel)}
        runner.execute(node, files, {})
    assert node.status == OK and node.primary is not None and set(node.metrics) == {spec.metric.name}
    assert node.feedback == ("the evaluator gave non-finite secondary metrics, left out of this node's metrics: "
                             "r2=nan, ratio=inf")
    journal = Journal(tmp_path / "journal.jsonl")
    journal.append(Finished(node, Checkpoint(policy=None, counters={}, usage={})))  # the journal refuses NaN: this must not raise
    assert "NaN" not in (tmp_path / "journal.jsonl").read_text()
