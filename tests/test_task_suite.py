"""Generic checks every built-in task goes through, parametrized over the folders under ml_tasks/ (a new task
is picked up by being there). The full `setup.py --check` runs in the default suite for the fixed fast
subset named `ci` in ml_tasks/suites.yaml; for every other task it, and a second prepare to check
determinism, are marked slow (`pytest -m slow`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark.authoring.task_check import check_task
from benchmark.plugins.manager import get_registry
from benchmark.tasks import workspace as ws
from benchmark.tasks.manifest import load_task
from benchmark.tasks.suites import load_suites, suite_tasks

REPO = Path(__file__).resolve().parents[1]
TASK_DIRS = sorted(p.parent for p in (REPO / "ml_tasks").glob("*/task.yaml"))
CHECKED_BY_DEFAULT = set(suite_tasks("ci"))  # fast tasks whose full check runs in the default suite


def each_task(slow_unless_checked: bool = False) -> list:
    params = []
    for task_dir in TASK_DIRS:
        marks = [pytest.mark.slow] if slow_unless_checked and task_dir.name not in CHECKED_BY_DEFAULT else []
        params.append(pytest.param(task_dir, id=task_dir.name, marks=marks))
    return params


def test_there_are_tasks() -> None:
    assert "causality" in {d.name for d in TASK_DIRS}


@pytest.mark.parametrize("task_dir", each_task())
def test_manifest_is_complete(task_dir: Path) -> None:
    spec = load_task(task_dir)
    assert spec.name == task_dir.name, "the folder and the manifest's name must agree"
    m = spec.metric
    assert m.rationale.strip() and m.best_possible is not None, "say what the best possible score is"
    assert m.better(m.target, m.floor) and not m.better(m.target, m.best_possible)
    assert spec.baseline is not None and spec.baseline.seeds, "record the baseline's measured val and test scores"
    assert spec.checks.trivial, "declare a trivial-predictor overlay (checks.trivial)"


@pytest.mark.parametrize("task_dir", each_task())
def test_description_states_the_metric_and_limits(task_dir: Path) -> None:
    spec = load_task(task_dir)
    text = spec.description_text().lower()
    assert spec.metric.name.lower() in text, f"{spec.description} never names the metric {spec.metric.name}"
    assert f"{spec.metric.direction} is better" in text, "say whether lower or higher is better"
    # the limit is CPU time of the job (benchmark/executors): say so in the unit
    assert f"{spec.budget.step_timeout_s:g} cpu-seconds" in text, "state the run's limit in CPU seconds (e.g. '120 CPU-seconds')"


@pytest.mark.slow
@pytest.mark.parametrize("task_dir", [p for p in each_task() if p.values[0].name not in CHECKED_BY_DEFAULT])
def test_prepare_is_deterministic(task_dir: Path, tmp_path: Path) -> None:
    """Two prepares write the same bytes (the `ci` tasks: covered by their full check below)."""
    spec = load_task(task_dir)
    sums = []
    for root in (tmp_path / "a", tmp_path / "b"):
        prepared = ws.prepare(spec, root=root, log=lambda _: None)
        sums.append(json.loads((prepared.root / ws.CHECKSUM_FILE).read_text())["files"])
    assert sums[0] == sums[1]


@pytest.mark.parametrize("task_dir", each_task(slow_unless_checked=True))
def test_full_check(task_dir: Path, workspace_root: Path) -> None:
    # The 60 s val limit is the CLI's; a test on a shared machine reports the time instead of asserting it.
    report = check_task(task_dir, root=workspace_root, val_seconds_limit=None)
    print(report.table())
    assert report.ok, report.table()


def test_suites_name_only_existing_tasks() -> None:
    known = set(get_registry().tasks)
    builtin = {d.name for d in TASK_DIRS}
    for name, tasks in load_suites().items():
        assert tasks and len(set(tasks)) == len(tasks), f"suite {name} lists a task twice"
        assert set(tasks) <= builtin & known, f"suite {name} names tasks that are not built in: {set(tasks) - builtin}"


@pytest.mark.slow
def test_requirements_install_together_without_cuda_wheels() -> None:
    """Needs PyPI: `pip install --dry-run --report` of every built-in task's requirements together."""
    from benchmark.tasks.requirements_check import builtin_specs, dry_run, offenders, union, _installed_torch

    plain, no_deps = union(builtin_specs())
    assert offenders(dry_run(plain) + dry_run(no_deps, no_deps=True), _installed_torch()) == []


def test_requirements_offenders_are_recognised() -> None:
    from benchmark.tasks.requirements_check import offenders

    found = offenders([("nvidia_cudnn-cu12", "9"), ("Triton", "3"), ("torch", "2.5.0"), ("numpy", "2"),
                       ("torch", "2.13.0+cpu")], "2.13.0+cpu")
    assert found == ["nvidia-cudnn-cu12 9 (a CUDA wheel)", "triton 3 (a CUDA wheel)",
                     "torch 2.5.0 would replace the installed torch 2.13.0+cpu"]


def test_setup_suite_prepares_its_tasks(causality, workspace_root: Path) -> None:
    from tests.conftest import run_cli

    result = run_cli("--suite", "ci", "--skip-requirements", script="setup.py",
                     env={"RESEARCHBENCH_WORKSPACE": str(workspace_root)})
    assert result.returncode == 0, result.stderr
    assert {line.split(":")[0] for line in result.stdout.splitlines()} == CHECKED_BY_DEFAULT
    unknown = run_cli("--suite", "nope", script="setup.py")
    assert unknown.returncode == 2 and unknown.stderr.startswith("error: unknown suite 'nope'; known suites: ci, lite")
