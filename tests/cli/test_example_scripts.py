"""The scripted replies shipped for every lite task (examples/scripts/<task>.yaml, llm=scripted's default):
each edit applies to the task's own baseline files and leaves valid Python, the reviews outlast the edits,
and a scripted run ends with one clear line when the script runs out instead of spending its budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from researchbench.benchmark.edits import apply_edits
from researchbench.benchmark.llm.client import load_script
from researchbench.benchmark.plugins.manager import get_registry
from researchbench.benchmark.tasks.manifest import TaskSpec, load_task
from researchbench.benchmark.tasks.suites import suite_tasks
from conftest import REPO, journal_records, run_inprocess

SCRIPTS = REPO / "examples" / "scripts"
REVIEWS = "analyze"


def _baseline(spec: TaskSpec) -> dict[str, str]:
    return {p.relative_to(spec.code_dir).as_posix(): p.read_text()
            for p in sorted(spec.code_dir.rglob("*")) if p.is_file() and spec.is_editable(p.relative_to(spec.code_dir).as_posix())}


@pytest.mark.parametrize("task", suite_tasks("lite"))
def test_every_lite_task_ships_a_script_whose_edits_apply_to_its_baseline(task: str) -> None:
    spec = load_task(get_registry().tasks[task])
    script = load_script(SCRIPTS / f"{task}.yaml")
    baseline = _baseline(spec)
    edits = [(queue, reply) for queue, replies in script.items() if queue != REVIEWS for reply in replies]
    assert len(edits) >= 3, f"{task}: a script needs a few edits to show a search"
    applied = dict(baseline)  # each reply applies to the baseline, or (a fix) on top of the reply before it
    for queue, reply in edits:
        result = apply_edits(reply, baseline, spec.is_editable)
        if not result.ok:
            result = apply_edits(reply, applied, spec.is_editable)
        assert result.ok and result.changed, f"{task} {queue}: {result.feedback or result.errors}"
        applied = {**applied, **result.files}
    assert len(script.get(REVIEWS, ())) >= len(edits) + 1, f"{task}: a review for the baseline and every edit"


@pytest.mark.parametrize("task", [t for t in suite_tasks("lite") if "default" in load_script(SCRIPTS / f"{t}.yaml")])
def test_default_lists_compose_in_any_order_an_agent_takes_them(task: str) -> None:
    """A `default` list serves every operator, so its edits touch different lines: each applies after
    all the others, whichever node the agent builds on."""
    spec = load_task(get_registry().tasks[task])
    replies = load_script(SCRIPTS / f"{task}.yaml")["default"]
    for order in (replies, replies[::-1]):
        files = _baseline(spec)
        for reply in order:
            result = apply_edits(reply, files, spec.is_editable)
            assert result.ok and result.changed, f"{task}: {result.feedback or result.errors}"
            files = {**files, **result.files}


def test_a_scripted_run_stops_when_the_script_runs_out(toy, tmp_path: Path) -> None:
    script = tmp_path / "two_edits.yaml"
    script.write_text('default:\n  - "### FILE: params.json\\n```json\\n{\\"slope\\": 3.0}\\n```\\n"\n'
                      '  - "### FILE: params.json\\n```json\\n{\\"slope\\": 2.5}\\n```\\n"\n')
    summary, out = run_inprocess("agent=greedy", "task=toy", "budget.steps=10", f"results_dir={tmp_path}",
                                 "llm=scripted", f"llm.script={script}")
    assert summary["steps"]["experiments"] == 2
    assert summary["stop_reason"] == ("scripted LLM: script exhausted after 2 replies; stopping "
                                      "(no reply left for operator 'improve': its 'default' list holds 2)")
    assert "scripted LLM: script exhausted after 2 replies; stopping" in out
    assert [r["kind"] for r in journal_records(Path(summary["run_dir"]))].count("abandoned") == 1


@pytest.mark.slow
def test_semi_supervised_script_runs_end_to_end_from_the_preset_default(workspace_root, tmp_path: Path) -> None:
    from conftest import _prepared

    _prepared("semi_supervised")
    summary, _ = run_inprocess("agent=greedy", "task=semi_supervised", f"results_dir={tmp_path}", "llm=scripted")
    nodes = [r["node"] for r in journal_records(Path(summary["run_dir"])) if r["kind"] == "finished"]
    assert [(n["operator"], n["status"]) for n in nodes[1:]] == [("improve", "ok")] * 3
    assert summary["stop_reason"].startswith("scripted LLM: script exhausted after 3 replies; stopping")
    assert summary["best"]["val"] > summary["baseline"]["val"]  # label spreading beats self-training


def test_help_says_mock_never_edits_and_where_the_scripts_are() -> None:
    from conftest import run_cli

    proc = run_cli("--help")
    assert proc.returncode == 0, proc.stderr
    assert "llm=mock answers every call with one reply that NEVER edits" in proc.stdout
    assert "examples/scripts/<task>.yaml" in proc.stdout


def test_the_presets_default_script_is_found_from_any_directory(tmp_path: Path, monkeypatch) -> None:
    from researchbench.benchmark.llm.config import script_path
    from conftest import compose

    monkeypatch.chdir(tmp_path)
    configured = compose("llm=scripted", "task=fairness").llm.script
    assert configured == "examples/scripts/fairness.yaml"
    assert script_path(configured) == SCRIPTS / "fairness.yaml"
    (tmp_path / "examples" / "scripts").mkdir(parents=True)
    (tmp_path / "examples" / "scripts" / "fairness.yaml").write_text("- mine\n")
    assert script_path(configured) == Path("examples/scripts/fairness.yaml")  # the user's own file comes first
