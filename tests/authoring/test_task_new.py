"""`python setup.py --new <name> [--from tabular] [--dest DIR]`: a task folder that passes `--check` as it is;
a bad name, an unknown template or an existing folder is refused in one line and creates nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from researchbench.benchmark.authoring.task_template import create_task, templates
from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.tasks.manifest import load_task
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
    assert "my_tab: 13 passed, 0 failed, 0 skipped in" in checked.stdout  # none warned (issue 26, new user 7)
    assert "target-spread            pass" in checked.stdout  # the baseline stays below its own target
    assert all(score < spec.metric.target for score in spec.baseline.test)


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


def _template_module(rel: str):
    import importlib.util

    from researchbench.benchmark.authoring.task_template import TEMPLATES_DIR

    spec = importlib.util.spec_from_file_location(f"tabular_{Path(rel).stem}", TEMPLATES_DIR / "tabular" / rel)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("rows, reason", [
    ("id,label\n1,0\n1,0\n2,1\n", "duplicated ids"),
    ("id,label\n1,0\n", "expected ids are missing"),
    ("id,label\n1,0\n2,1\n3,1\n", "unexpected ids"),
    ("id,label\n1,0\n2,7\n", "labels outside [0, 1]"),
    ("id,label\n1,0\n2,0.5\n", "column label must hold integers"),
    ("id,label\n1,0\n2,nan\n", "column label must hold integers"),
    ("id,score\n1,0\n2,1\n", "lacks columns ['label']"),
    (None, "was not written"),
], ids=["duplicate", "missing", "extra", "unknown-label", "fraction", "nan", "no-label-column", "no-file"])
def test_template_evaluator_rejects_hostile_predictions(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                       rows: str | None, reason: str) -> None:
    evaluate = _template_module("evaluate.py")
    (tmp_path / "labels").mkdir()
    (tmp_path / "labels" / "val_labels.csv").write_text("id,label\n1,0\n2,1\n")
    (tmp_path / "preds").mkdir()
    if rows is not None:
        (tmp_path / "preds" / "predictions.csv").write_text(rows)
    metrics = tmp_path / "metrics.json"
    metrics.write_text('{"metrics": {"accuracy": 1.0}}')  # a stale file must not survive
    argv = ["--phase", "val", "--predictions-dir", str(tmp_path / "preds"), "--labels", str(tmp_path / "labels"),
            "--metrics", str(metrics)]
    assert evaluate.main(argv) == 1 and not metrics.exists()
    err = capsys.readouterr().err
    assert reason in err and len(err.strip().splitlines()) == 1, err
    (tmp_path / "preds" / "predictions.csv").write_text("id,label\n2,1\n1,1\n")
    assert evaluate.main(argv) == 0
    assert '"accuracy": 0.5' in metrics.read_text() and '"balanced_accuracy": 0.5' in metrics.read_text()


def test_template_driver_rejects_bad_model_output() -> None:
    driver = _template_module("baseline/driver.py")
    assert list(driver.check_predictions([0, 1, 1], 3)) == [0, 1, 1]
    for raw, reason in (([0, 1], r"expected \(3,\)"), ([0, 0.5, 1], "integer class labels"),
                        ([0, float("nan"), 1], "integer class labels"), ("abc", "must return numbers")):
        with pytest.raises(driver.DriverError, match=reason):
            driver.check_predictions(raw, 3)
