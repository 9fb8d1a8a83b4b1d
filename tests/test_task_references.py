"""Every built-in task's reference solution (`checks.reference`) reaches the target on the hidden test for each
baseline seed, through `setup.py --check --reference`'s own code: proof that the target is attainable and that
the evaluator scores it (docs/tasks.md, "Headroom"). Slow: one test phase per seed per task."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark.authoring.task_check import PASS, check_task
from benchmark.tasks.manifest import load_task

REPO = Path(__file__).resolve().parents[1]
TASK_DIRS = sorted(p.parent for p in (REPO / "ml_tasks").glob("*/task.yaml"))
WITH_REFERENCE = [d for d in TASK_DIRS if load_task(d).checks.reference is not None]
# Everything but the manifest, the workspace and the reference: `test_task_suite.py` runs the rest.
NOT_REFERENCE = ("description", "prepare-deterministic", "isolation", "label-probe", "baseline-val", "determinism",
                 "baseline-test", "baseline-record", "target-spread", "trivial")


@pytest.mark.slow
@pytest.mark.timeout(7200)  # a test phase per baseline seed; each phase is bounded by the task's own limits
@pytest.mark.parametrize("task_dir", WITH_REFERENCE, ids=[d.name for d in WITH_REFERENCE])
def test_reference_reaches_the_target_on_every_seed(task_dir: Path, workspace_root: Path) -> None:
    report = check_task(task_dir, root=workspace_root, skip=NOT_REFERENCE, reference=True)
    print(report.table())
    rows = {row.name: row for row in report.rows}
    assert rows["reference"].status == PASS and report.ok, report.table()


def test_every_builtin_task_declares_a_reference() -> None:
    missing = sorted(d.name for d in TASK_DIRS if d not in WITH_REFERENCE)
    assert not missing, f"built-in tasks without checks.reference: {', '.join(missing)}"
