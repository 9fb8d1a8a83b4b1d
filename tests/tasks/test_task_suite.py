"""Suites (ml_tasks/suites.yaml), `setup.py --suite`, and the built-in tasks' requirements taken together.
Every task's own checks: tests/ml_tasks/test_tasks.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from researchbench.benchmark.plugins import get_registry
from researchbench.benchmark.tasks.suites import load_suites, suite_tasks

REPO = Path(__file__).resolve().parents[2]
BUILTIN = {p.parent.name for p in (REPO / "ml_tasks").glob("*/task.yaml")}


def test_suites_name_only_existing_tasks() -> None:
    known = set(get_registry().tasks)
    for name, tasks in load_suites().items():
        assert tasks and len(set(tasks)) == len(tasks), f"suite {name} lists a task twice"
        assert set(tasks) <= BUILTIN & known, f"suite {name} names tasks that are not built in: {set(tasks) - BUILTIN}"


@pytest.mark.slow
def test_requirements_install_together_without_cuda_wheels() -> None:
    """Needs PyPI: `pip install --dry-run --report` of every built-in task's requirements together."""
    from researchbench.benchmark.tasks.requirements_check import (builtin_specs, dry_run, offenders, union,
                                                                  _installed_torch)

    plain, no_deps = union(builtin_specs())
    assert offenders(dry_run(plain) + dry_run(no_deps, no_deps=True), _installed_torch()) == []


def test_requirements_offenders_are_recognised() -> None:
    from researchbench.benchmark.tasks.requirements_check import offenders

    found = offenders([("nvidia_cudnn-cu12", "9"), ("Triton", "3"), ("torch", "2.5.0"), ("numpy", "2"),
                       ("torch", "2.13.0+cpu")], "2.13.0+cpu")
    assert found == ["nvidia-cudnn-cu12 9 (a CUDA wheel)", "triton 3 (a CUDA wheel)",
                     "torch 2.5.0 would replace the installed torch 2.13.0+cpu"]


def test_setup_suite_prepares_its_tasks(causality, workspace_root: Path) -> None:
    from tests.conftest import run_cli

    result = run_cli("--suite", "ci", "--skip-requirements", script="setup.py",
                     env={"RESEARCHBENCH_WORKSPACE": str(workspace_root)})
    assert result.returncode == 0, result.stderr
    assert {line.split(":")[0] for line in result.stdout.splitlines()} == set(suite_tasks("ci"))
    unknown = run_cli("--suite", "nope", script="setup.py")
    assert unknown.returncode == 2 and unknown.stderr.startswith("error: unknown suite 'nope'; known suites: ci, gpu, lite")
