"""Task manifest schema 2: a schema-1 manifest from the earlier release still loads (migrated in memory, one
notice), and `setup.py --check <task> --migrate` rewrites it to schema 2 with a minimal edit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from researchbench.benchmark.authoring.task_check import FAIL, WARN
from researchbench.benchmark.tasks import schema
from researchbench.benchmark.tasks.manifest import SCHEMA_VERSION, load_task
from conftest import FIXTURES, REPO, run_cli
from task_kit import TASK_NAMES

# ml_tasks/causality/task.yaml, evaluate.py, description.md and baseline/ as of 91baab4 (schema 1, before
# `outputs` was required), frozen: never edit these files
FROZEN = FIXTURES / "schema1" / "causality"
LINE = FIXTURES / "check_tasks" / "line"


@pytest.fixture(autouse=True)
def fresh_notices(monkeypatch):
    monkeypatch.setattr(schema, "_noticed", set())


def test_a_frozen_schema_1_manifest_loads_migrated_with_one_notice(capsys):
    spec = load_task(FROZEN)
    assert SCHEMA_VERSION == 2 and spec.schema == 2
    assert spec.outputs == ("predictions.csv",)  # what its evaluate.py reads from {output}
    frozen = yaml.safe_load((FROZEN / "task.yaml").read_text())
    assert (spec.name, spec.version, spec.metric.target, spec.budget.steps) == (
        frozen["name"], frozen["version"], frozen["metric"]["target"], frozen["budget"]["steps"])
    assert spec.phases["val"] == tuple(frozen["phases"]["val"]) and spec.evaluator == tuple(frozen["evaluator"])
    load_task(FROZEN)
    (notice,) = capsys.readouterr().err.splitlines()  # once per manifest, however often it is loaded
    assert "is task schema 1, read as schema 2" in notice and "outputs: ['predictions.csv']" in notice
    assert "`python setup.py --check causality --migrate`" in notice


def test_migrate_rewrites_a_copy_minimally_and_it_loads_without_notice(tmp_path, capsys):
    task = tmp_path / "causality"
    shutil.copytree(FROZEN, task)
    migrated_in_memory = load_task(task)
    capsys.readouterr()
    before = (task / "task.yaml").read_text().splitlines()

    assert schema.migrate_file(task / "task.yaml") == ["schema 1 -> 2", "outputs: ['predictions.csv'] "
                                                                          "(what evaluate.py reads from {output})"]
    after = (task / "task.yaml").read_text().splitlines()
    added = [line for line in after if line not in before]
    assert added == ["schema: 2", "# What the evaluator is handed: the harness copies exactly these regular files "
                                  "out of {output}.", 'outputs: ["predictions.csv"]']
    assert [line for line in before if line not in after] == ["schema: 1"]  # every comment and line kept, in order
    assert after[after.index('outputs: ["predictions.csv"]') + 1].startswith("prepare:")  # right after `evaluator`
    assert load_task(task) == migrated_in_memory
    assert capsys.readouterr().err == ""
    assert schema.migrate_file(task / "task.yaml") == []  # already schema 2: untouched
    assert not [p.name for p in task.iterdir() if p.name.endswith(".tmp")]


def test_migrate_appends_outputs_when_the_evaluator_entry_is_missing_and_no_newline_ends_the_file(tmp_path):
    manifest = tmp_path / "task.yaml"
    manifest.write_text("# mine\nschema: 1  # old\nname: x")
    assert schema.migrate_file(manifest)[0] == "schema 1 -> 2"
    assert manifest.read_text().splitlines()[:3] == ["# mine", "schema: 2  # old", "name: x"]
    assert yaml.safe_load(manifest.read_text())["outputs"] == ["predictions.csv"]  # the conventional file


@pytest.mark.parametrize("manifest", [REPO / "ml_tasks" / name / "task.yaml" for name in TASK_NAMES],
                         ids=lambda p: p.parent.name)
def test_the_derived_outputs_match_every_shipped_task(manifest):
    raw = yaml.safe_load(manifest.read_text())
    assert raw["schema"] == SCHEMA_VERSION
    assert schema.derive_outputs(raw, manifest.parent)[0] == raw["outputs"]


def test_setup_check_migrate_rewrites_then_checks(tmp_path):
    task = tmp_path / "tasks" / "line"
    shutil.copytree(LINE, task)
    text = (task / "task.yaml").read_text()
    old = text.replace("schema: 2\n", "schema: 1\n").replace('outputs: ["predictions.json"]\n', "")
    assert old != text
    (task / "task.yaml").write_text(old)
    env = {"RESEARCHBENCH_TASKS_PATH": str(task.parent), "RESEARCHBENCH_WORKSPACE": str(tmp_path / "ws")}
    result = run_cli("--check", "line", "--migrate", "--skip-requirements", script="setup.py", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"line: {task / 'task.yaml'} migrated (schema 1 -> 2; outputs: ['predictions.json']" in result.stdout
    assert "notice:" not in result.stderr and "all checks passed" in result.stdout
    assert yaml.safe_load((task / "task.yaml").read_text()) == yaml.safe_load(text)


NEW_RULES = ("description", "trivial")  # rows added with schema 2: the metric named, a trivial overlay declared


def _rows(task: Path, **kwargs) -> dict[str, tuple[str, str]]:
    from researchbench.benchmark.authoring.task_check import check_task

    report = check_task(task, skip=("prepare",), **kwargs)  # the manifest rows only: no data, no jobs
    return {row.name: (row.status, row.detail) for row in report.rows}


def test_rules_added_with_schema_2_warn_a_schema_1_task_with_the_fix_and_fail_a_schema_2_task(tmp_path):
    """Issue 26 (new user 8): a copy of the frozen schema-1 causality whose description does not name its
    metric (schema 1 did not ask for it) and which declares no trivial overlay: `--check` warns on both
    rows with the fix for one release (the check passes), while the same task as schema 2 fails them."""
    import re

    task = tmp_path / "causality"
    shutil.copytree(FROZEN, task)
    description = task / "description.md"
    description.write_text(re.sub("pehe", "error", description.read_text(), flags=re.IGNORECASE))
    rows = _rows(task)
    for name in NEW_RULES:
        status, detail = rows[name]
        assert status == WARN and "until the next release, then fails" in detail, (name, rows[name])
    assert "describe it" in rows["description"][1] and "add one so the floor is tested" in rows["trivial"][1]
    assert not [name for name, (status, _) in rows.items() if status == FAIL]
    assert schema.migrate_file(task / "task.yaml")[0] == "schema 1 -> 2"
    assert {name: _rows(task)[name][0] for name in NEW_RULES} == {"description": FAIL, "trivial": FAIL}
    assert {name: _rows(task, legacy=True)[name][0] for name in NEW_RULES} == {"description": WARN, "trivial": WARN}
