"""A refused command line is refused before the heavy libraries load: the behaviour behind a fast preflight
(benchmarks/preflight_speed.py measures the time; this checks what was imported, which load cannot blur)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("preflight_speed",
                                               Path(__file__).resolve().parents[2] / "benchmarks" / "preflight_speed.py")
preflight_speed = importlib.util.module_from_spec(_spec)
sys.modules["preflight_speed"] = preflight_speed  # dataclasses resolve their module by name
_spec.loader.exec_module(preflight_speed)

MUST_NOT_LOAD = {"litellm", "torch", "transformers", "optuna"}


@pytest.mark.parametrize("case", preflight_speed.cases("toy", "EMPTY"), ids=lambda c: c.name)
def test_each_refusal_is_one_line_before_any_heavy_import(case, toy, tmp_path: Path) -> None:
    if "RESEARCHBENCH_WORKSPACE" in case.env:
        case.env["RESEARCHBENCH_WORKSPACE"] = str(tmp_path)  # an empty workspace: the task is not prepared
    proc, _, _ = preflight_speed.run_case(case, importtime=True)
    assert preflight_speed.check(case, proc) == ""
    assert MUST_NOT_LOAD.isdisjoint(preflight_speed.heavy_imports(proc.stderr)), preflight_speed.heavy_imports(proc.stderr)


def test_heavy_imports_reads_importtime_lines() -> None:
    stderr = ("import time: self [us] | cumulative | imported package\n"
              "import time:       271 |     146737 | hydra\n"
              "import time:        15 |         15 |       litellm.types\n"
              "error: something\n")
    assert preflight_speed.heavy_imports(stderr) == ["litellm"]
    assert preflight_speed.error_lines(stderr) == ["error: something"]


def test_script_prints_a_row_per_case(toy) -> None:
    from conftest import run_cli

    proc = run_cli("--task", "toy", "--repeats", "1", script="benchmarks/preflight_speed.py")
    assert proc.returncode == 0, proc.stderr
    for case in preflight_speed.cases("toy", ""):
        assert case.name in proc.stdout


def test_script_names_the_fix_when_the_task_is_not_prepared(tmp_path: Path) -> None:
    from conftest import run_cli

    proc = run_cli("--task", "toy", "--repeats", "1", script="benchmarks/preflight_speed.py",
                   env={"RESEARCHBENCH_WORKSPACE": str(tmp_path)})
    assert proc.returncode == 2
    assert "setup.py --task toy" in proc.stderr and "Traceback" not in proc.stderr
