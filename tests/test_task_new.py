"""`python setup.py --new <name> [--from tabular] [--dest DIR]`: a task folder that passes `--check` as it is;
a bad name, an unknown template or an existing folder is refused in one line and creates nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark.errors import UserError
from benchmark.task import load_task
from benchmark.task_template import create_task, templates
from tests.conftest import run_cli


def test_new_task_from_the_template_passes_check(tmp_path: Path) -> None:
    dest = tmp_path / "tasks"
    env = {"RESEARCHBENCH_WORKSPACE": str(tmp_path / "ws"), "RESEARCHBENCH_TASKS_PATH": str(dest)}
    created = run_cli("--new", "my_tab", "--from", "tabular", "--dest", str(dest), script="setup.py", env=env)
    assert created.returncode == 0, created.stderr
    assert f"created {dest / 'my_tab'}" in created.stdout and "--check my_tab" in created.stdout
    spec = load_task(dest / "my_tab")
    assert spec.name == "my_tab" and spec.checks.trivial == ("checks/majority",) and spec.baseline is not None
    assert "__TASK_NAME__" not in "".join(p.read_text() for p in (dest / "my_tab").rglob("*") if p.is_file())
    assert "TODO(author)" in spec.description_text()  # the skeleton says what to fill in

    checked = run_cli("--check", "my_tab", "--skip-requirements", script="setup.py", env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "my_tab: 11 passed, 0 failed, 0 skipped" in checked.stdout


@pytest.mark.parametrize("name", ["My-Task", "_x", "a/b", "", "a b", "../x"])
def test_bad_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(UserError, match="is not a task name"):
        create_task(name, dest=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_existing_folder_registered_name_and_unknown_template_are_refused(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    result = run_cli("--new", "taken", "--dest", str(tmp_path), script="setup.py")
    assert result.returncode == 2 and result.stderr == f"error: {tmp_path / 'taken'} already exists; pick another name or remove it\n"
    with pytest.raises(UserError, match="a task named 'causality' is already registered"):
        create_task("causality", dest=tmp_path)
    with pytest.raises(UserError, match=f"unknown template 'image'; available: {', '.join(templates())}"):
        create_task("fresh", template="image", dest=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]  # nothing half-made
