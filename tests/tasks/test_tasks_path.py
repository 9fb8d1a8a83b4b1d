"""$RESEARCHBENCH_TASKS_PATH: an entry is a folder of tasks or a task folder itself; an entry that is missing
or holds no task is one warning line; "unknown task" errors name the variable."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.conftest import FIXTURES, run_cli

LINE = FIXTURES / "check_tasks" / "line"


def listing(tasks_path: str, tmp_path: Path):
    return run_cli("--list", script="setup.py",
                   env={"RESEARCHBENCH_TASKS_PATH": tasks_path, "RESEARCHBENCH_WORKSPACE": str(tmp_path / "ws")})


def listed_names(stdout: str) -> set[str]:
    return {line.split()[0] for line in stdout.splitlines() if line.strip()}


def test_a_task_folder_itself_is_registered(tmp_path: Path) -> None:
    result = listing(str(LINE), tmp_path)
    assert result.returncode == 0 and result.stderr == ""
    assert {"line", "causality"} <= listed_names(result.stdout)


def test_a_folder_of_tasks_is_registered(tmp_path: Path) -> None:
    shutil.copytree(LINE, tmp_path / "tasks" / "line")
    result = listing(str(tmp_path / "tasks"), tmp_path)
    assert result.returncode == 0 and result.stderr == "" and "line" in listed_names(result.stdout)


def test_missing_and_empty_entries_warn_one_line_each(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    missing = tmp_path / "missing"
    result = listing(os.pathsep.join([str(missing), str(empty), str(LINE)]), tmp_path)
    assert result.returncode == 0
    assert result.stderr.splitlines() == [
        f"warning: RESEARCHBENCH_TASKS_PATH entry {missing} is not a folder; no tasks from it",
        f"warning: RESEARCHBENCH_TASKS_PATH entry {empty} holds no task (no task.yaml in it or in its sub-folders)",
    ]
    assert "line" in listed_names(result.stdout)  # the good entry still counts


def test_unknown_task_errors_name_the_variable(tmp_path: Path) -> None:
    env = {"RESEARCHBENCH_WORKSPACE": str(tmp_path / "ws")}
    setup = run_cli("--task", "nope", "--skip-requirements", script="setup.py", env=env)
    assert setup.returncode == 2 and "$RESEARCHBENCH_TASKS_PATH" in setup.stderr
    assert len(setup.stderr.strip().splitlines()) == 1
    run = run_cli("task=nope", f"results_dir={tmp_path / 'results'}", env=env)
    assert run.returncode == 2 and "unknown task 'nope'" in run.stderr and "$RESEARCHBENCH_TASKS_PATH" in run.stderr
