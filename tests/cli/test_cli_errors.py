"""Bad input gets one line naming the fix and exit code 2, never a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import FIXTURES, one_line_error, run_cli


@pytest.mark.parametrize("args, fragments", [
    (["agent=nope", "task=toy"], ["unknown agent 'nope'", "optuna"]),
    (["task=nope"], ["unknown task 'nope'", "toy"]),
    (["agent=aidee", "task=toy"], ["unknown agent 'aidee'; did you mean 'aide'?", "run_agent_benchmark.py list agents"]),
    (["task=tyo"], ["unknown task 'tyo'; did you mean 'toy'?", "run_agent_benchmark.py list tasks"]),
    (["task=toy", "llm=opnai"], ["unknown llm 'opnai'; did you mean 'openai'?", "run_agent_benchmark.py list llms"]),
    (["task=toy", "executor=modl"], ["unknown executor 'modl'; did you mean 'modal'?", "list executors"]),
    (["task=toy", "agent=greedy", "agent.max_debug_dept=2"], ["agent.max_debug_depth"]),
    (["task=toy", "budget.stepz=3"], ["budget.steps"]),
    (["task=toy", "seed=abc"], ["seed=abc"]),
    (["task=toy", "greedy"], ["key=value"]),
])
def test_bad_command_lines(args, fragments) -> None:
    one_line_error(run_cli(*args), *fragments)


def test_malformed_task_yaml(tmp_path: Path) -> None:
    bad = tmp_path / "tasks" / "broken"
    bad.mkdir(parents=True)
    (bad / "task.yaml").write_text("name: broken\nmetric: [unclosed\n")
    env = {"RESEARCHBENCH_TASKS_PATH": os.pathsep.join([str(FIXTURES / "tasks"), str(tmp_path / "tasks")])}
    one_line_error(run_cli("task=broken", env=env), "task.yaml", "YAML")


def test_unknown_key_in_task_yaml(tmp_path: Path) -> None:
    task = tmp_path / "tasks" / "typo"
    task.mkdir(parents=True)
    text = (FIXTURES / "tasks" / "toy" / "task.yaml").read_text().replace("name: toy", "name: typo")
    (task / "task.yaml").write_text(text.replace("budget:", "budgett:"))
    env = {"RESEARCHBENCH_TASKS_PATH": str(tmp_path / "tasks")}
    one_line_error(run_cli("task=typo", env=env), "budgett")


def test_unprepared_workspace(tmp_path: Path) -> None:
    proc = run_cli("task=toy", f"results_dir={tmp_path}", env={"RESEARCHBENCH_WORKSPACE": str(tmp_path / "empty")})
    one_line_error(proc, "python setup.py --task toy")


def test_llm_agent_without_key_names_the_variable(toy, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = run_cli("agent=greedy", "task=toy", "llm=openai", f"results_dir={tmp_path / 'results'}", env=env)
    one_line_error(proc, "OPENAI_API_KEY", "agent=optuna")
    assert not (tmp_path / "results").exists(), "a refused run must leave no run directory behind"


@pytest.mark.parametrize("args", [["task=toy", "budget.stepz=3"], ["agent=nope", "task=toy"]])
def test_config_errors_leave_no_results_behind(args, tmp_path: Path) -> None:
    one_line_error(run_cli(*args, f"results_dir={tmp_path / 'results'}", cwd=tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "a refused run must write nothing"


def test_different_config_in_same_run_dir_is_refused(toy, tmp_path: Path) -> None:
    assert run_cli("task=toy", "budget.steps=1", "run_id=mine", f"results_dir={tmp_path}").returncode == 0
    proc = run_cli("task=toy", "budget.steps=2", "run_id=mine", f"results_dir={tmp_path}")
    one_line_error(proc, "different configuration", "run_id=")
