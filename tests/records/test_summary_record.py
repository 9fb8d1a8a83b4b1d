"""summary.json typed and versioned (benchmark/records/summary.py): one writer, one reader, every field
documented, a summary written before the format had a number read the same way, and no other module
parsing the file itself."""

from __future__ import annotations

import ast
import copy
import json
import os
import re
import shutil
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable

import pytest

from researchbench.benchmark.records import summary as records
from researchbench.benchmark.records.summary import (SUMMARY_CAP, SUMMARY_FILE, SUMMARY_FORMAT, BestRecord,
                                                     BudgetLimits, BudgetRecord, BudgetUsed, MetricRecord, RunSummary,
                                                     Scores, Steps, SummaryError, parse_summary, read_summary,
                                                     write_summary)

REPO = Path(__file__).resolve().parents[2]
FROZEN = REPO / "tests" / "fixtures" / "summaries" / "format0-aide-fairness.json"
DOC = REPO / "docs" / "records.md"


def _summary(**changes: Any) -> dict[str, Any]:
    """A summary as benchmark.run.summary.build makes it (no `format`: the writer adds it)."""
    summary: dict[str, Any] = {
        "status": "running", "agent": "greedy", "uses_llm": True, "task": "toy", "task_version": "1.0.0",
        "domain": "testing", "seed": 3, "run_dir": "/r/greedy/toy/seed3-abc", "sandbox": "bwrap",
        "metric": {"name": "mse", "direction": "lower", "floor": 20.0, "target": 0.0, "best_possible": 0.0},
        "noise": None,
        "baseline": {"val": 12.0, "test": None},
        "best": {"node": "0002", "val": 4.0, "test": None, "achievement_test": None, "normalized_test": None,
                 "test_error": None},
        "steps": {"experiments": 2, "nodes": 3, "by_status": {"ok": 2, "buggy": 1}},
        "budget": {"limits": {"experiments": 10, "compute_hours": 1.0, "usd": 2.0, "step_timeout_s": 30.0},
                   "clock": "cpu",
                   "used": {"experiments": 2, "compute_hours": 0.01, "usd": 0.25, "offline_llm": False,
                            "tokens": 1200, "unknown_cost_calls": 0}},
        "wall_seconds": 12.5, "stop_reason": None, "llm": {"calls": 3, "prompt_tokens": 1000},
        "provenance": {"seed": 3, "task": "toy", "framework_git": "f" * 40}, "updated_at": 1_700_000_000.5,
    }
    summary.update(changes)
    return summary


def _write(run_dir: Path, value: Any) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / SUMMARY_FILE
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return path


# ------------------------------------------------------------------------------------------ the round trip
def test_what_the_writer_writes_the_reader_reads_back(tmp_path: Path) -> None:
    summary = _summary()
    written = write_summary(tmp_path, summary)
    on_disk = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert on_disk == {**summary, "format": SUMMARY_FORMAT} and "format" not in summary  # the caller's dict untouched
    read = read_summary(tmp_path)
    assert read == written and read.raw == on_disk and read.format == SUMMARY_FORMAT == 1
    assert read == RunSummary(
        agent="greedy", task="toy", seed=3, status="running",
        metric=MetricRecord("mse", "lower", 20.0, 0.0, 0.0), baseline=Scores(12.0, None),
        best=BestRecord(val=4.0, test=None, node="0002"), steps=Steps(2, 3, {"ok": 2, "buggy": 1}),
        budget=BudgetRecord(BudgetLimits(10, 1.0, 2.0, 30.0), "cpu", BudgetUsed(2, 0.01, 0.25, False, 1200, 0)),
        format=1, uses_llm=True, task_version="1.0.0", domain="testing", run_dir="/r/greedy/toy/seed3-abc",
        sandbox="bwrap", wall_seconds=12.5, llm={"calls": 3, "prompt_tokens": 1000},
        provenance={"seed": 3, "task": "toy", "framework_git": "f" * 40}, updated_at=1_700_000_000.5)
    assert read.metric.better(1.0, 2.0) and not read.metric.better(2.0, 2.0)


def test_the_written_file_keeps_the_engines_layout(tmp_path: Path) -> None:
    """Sorted keys, two-space indent, a final newline: the text the engine wrote before the writer existed."""
    write_summary(tmp_path, _summary(status="finished", abort_cause=None))
    text = (tmp_path / SUMMARY_FILE).read_text()
    assert text == json.dumps({**_summary(status="finished", abort_cause=None), "format": 1}, indent=2,
                              sort_keys=True) + "\n"


# ------------------------------------------------------------------------------------------ format 0
def test_a_format_0_summary_reads_the_same_way(tmp_path: Path) -> None:
    """Every summary written before `format` existed (here a recorded aide run) reads with its own values."""
    shutil.copy(FROZEN, tmp_path / SUMMARY_FILE)
    s = read_summary(tmp_path)
    assert "format" not in s.raw and s.format == 0
    assert (s.agent, s.task, s.seed, s.status, s.task_version, s.domain) == \
        ("aide", "fairness", 0, "finished", "5.0.0", "fairness")
    assert s.metric == MetricRecord("accuracy_at_parity", "higher", 0.6865671641791045, 0.86096, 0.9521)
    assert s.baseline == Scores(0.5161339290747105, 0.5224453089668256)
    assert s.best == BestRecord(val=0.7706205813040062, test=0.7517674783974863, node="0002",
                                achievement_test=0.37387037094427245, normalized_test=0.37387037094427245)
    assert s.steps == Steps(experiments=10, nodes=11, by_status={"ok": 11})
    assert s.budget == BudgetRecord(BudgetLimits(10, 1.0, 2.0, 120.0), "cpu",
                                    BudgetUsed(10, 0.09405, 0.0, False, 138658, 21))
    assert s.uses_llm is True and s.sandbox == "bwrap" and s.wall_seconds == 2089.9
    assert s.stop_reason == "used the budget of 10 experiments" and s.updated_at == 1795836289.261
    assert s.noise is not None and s.noise["version"] == "5.0.0" and s.llm["calls"] == 21
    assert s.provenance["framework_git"] == "94a2e6f2e2a7837f3640d4753924663df4534437"
    assert s.raw == json.loads(FROZEN.read_text())


def test_the_scorer_reads_a_format_0_summary_as_before(tmp_path: Path) -> None:
    from researchbench.benchmark.scoring.runs import MetricInfo, budget_label, load_run

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(FROZEN, run_dir / SUMMARY_FILE)
    run = load_run(run_dir)  # no journal, no config: it still scores, with notes
    assert (run.agent, run.task, run.seed, run.budget_steps, run.task_version) == ("aide", "fairness", 0, 10, "5.0.0")
    assert run.budget_label == budget_label(run.summary) == "10exp/$2/1h"
    assert run.score("best", "test") == 0.7517674783974863 and run.score("baseline", "val") == 0.5161339290747105
    assert MetricInfo is MetricRecord and run.metric == run.summary.metric and run.domain == "fairness"
    assert run.uses_llm and run.environment_label == "lock 4d682a452963" and run.finished_at == 1795836289.261


def test_optional_fields_default_when_an_old_summary_lacks_them(tmp_path: Path) -> None:
    lean = _summary()
    for key in ("uses_llm", "task_version", "domain", "run_dir", "sandbox", "noise", "wall_seconds", "stop_reason",
                "llm", "provenance", "updated_at"):
        del lean[key]
    lean["metric"] = {"name": "mse", "direction": "lower", "floor": 20, "target": 0}  # ints, no best_possible
    lean["best"], lean["steps"] = {"node": None}, {}
    lean["budget"] = {"limits": {"experiments": 5}}
    s = parse_summary(lean)
    assert s.metric == MetricRecord("mse", "lower", 20.0, 0.0, None) and isinstance(s.metric.floor, float)
    assert s.best == BestRecord() and s.steps == Steps() and s.budget == BudgetRecord(BudgetLimits(5))
    assert (s.uses_llm, s.task_version, s.domain, s.noise, s.wall_seconds, s.llm, s.provenance) == \
        (None, None, None, None, None, {}, {})


def test_extra_keys_are_tolerated_and_kept(tmp_path: Path) -> None:
    """A key a newer version of the same format adds (anywhere) is no error, and `raw` keeps it for those
    that pass the summary on whole."""
    summary = _summary(future={"a": [1, 2]}, budget={**_summary()["budget"], "gpu_hours": 3})
    summary["metric"] = {**summary["metric"], "unit": "mse points"}
    path = _write(tmp_path, {**summary, "format": 1})
    s = read_summary(path.parent)
    assert s.raw["future"] == {"a": [1, 2]} and s.raw["metric"]["unit"] == "mse points"
    assert s == parse_summary(_summary(format=1))


def test_optional_fields_of_the_wrong_type_read_as_absent() -> None:
    """As the scorer and the viewer always treated them: a number is a number only when it is one."""
    s = parse_summary(_summary(wall_seconds="12", uses_llm="yes", noise=[1], llm="x",
                               baseline={"val": True, "test": "0.5"}))
    assert (s.wall_seconds, s.uses_llm, s.noise, s.llm, s.baseline) == (None, None, None, {}, Scores())


# ------------------------------------------------------------------------------------------ refusals
def _without(*path: str) -> Callable[[Path], None]:
    def make(run_dir: Path) -> None:
        summary = _summary()
        where = summary
        for key in path[:-1]:
            where = where[key]
        del where[path[-1]]
        _write(run_dir, summary)
    return make


def _with(value: Any) -> Callable[[Path], None]:
    return lambda run_dir: _write(run_dir, value)


def _changed(path: str, value: Any) -> Callable[[Path], None]:
    def make(run_dir: Path) -> None:
        summary = copy.deepcopy(_summary())
        *parents, last = path.split(".")
        where = summary
        for key in parents:
            where = where[key]
        where[last] = value
        _write(run_dir, summary)
    return make


def _link(run_dir: Path) -> None:
    elsewhere = _write(run_dir.parent / "elsewhere", _summary())
    run_dir.mkdir()
    (run_dir / SUMMARY_FILE).symlink_to(elsewhere)


def _fifo(run_dir: Path) -> None:
    run_dir.mkdir()
    os.mkfifo(run_dir / SUMMARY_FILE)


def _huge(run_dir: Path) -> None:
    _write(run_dir, json.dumps({**_summary(), "padding": "x" * SUMMARY_CAP}))


MALFORMED = {
    "missing": (lambda run_dir: run_dir.mkdir(), "is missing"),
    "a directory": (lambda run_dir: (run_dir / SUMMARY_FILE).mkdir(parents=True), "not a regular file"),
    "a link (not followed)": (_link, "symbolic link"),
    "a FIFO (no hang)": (_fifo, "not a regular file"),
    "too large": (_huge, "larger than 4 MiB"),
    "not JSON": (_with('{"agent": "greedy", '), "is not JSON"),
    "not UTF-8": (lambda run_dir: (run_dir.mkdir(), (run_dir / SUMMARY_FILE).write_bytes(b"\xff\xfe{")),
                  "is not JSON"),
    "nested too deep": (_with("[" * 100_000 + "]" * 100_000), "is not"),
    "not an object": (_with([_summary()]), "is not a JSON object"),
    "without an agent": (_without("agent"), "agent is missing"),
    "without a task": (_without("task"), "task is missing"),
    "without a seed": (_without("seed"), "seed is missing"),
    "a seed that is text": (_changed("seed", "3"), "seed is not an integer"),
    "without a status": (_without("status"), "status is missing"),
    "without a metric": (_without("metric"), "metric is missing"),
    "a metric that is text": (_changed("metric", "mse"), "metric is not an object"),
    "without a metric name": (_without("metric", "name"), "metric.name is missing"),
    "without a direction": (_without("metric", "direction"), "metric.direction is missing"),
    "a direction of neither kind": (_changed("metric.direction", "up"), "metric.direction is neither"),
    "without a floor": (_without("metric", "floor"), "metric.floor is missing"),
    "a floor that is text": (_changed("metric.floor", "0.5"), "metric.floor is not a number"),
    "without a target": (_without("metric", "target"), "metric.target is missing"),
    "without a baseline": (_without("baseline"), "baseline is missing"),
    "without a best": (_without("best"), "best is missing"),
    "without a budget": (_without("budget"), "budget is missing"),
    "without budget limits": (_without("budget", "limits"), "budget.limits is missing"),
    "without an experiment limit": (_without("budget", "limits", "experiments"),
                                    "budget.limits.experiments is missing"),
    "without steps": (_without("steps"), "steps is missing"),
    "a newer format": (_changed("format", SUMMARY_FORMAT + 1), "newer researchbench"),
    "a format that is not a number": (_changed("format", "1"), "format is not a format number"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_each_malformed_summary_is_one_line_naming_the_file(tmp_path: Path, case: str) -> None:
    make, reason = MALFORMED[case]
    run_dir = tmp_path / "run"
    make(run_dir)
    with pytest.raises(SummaryError) as raised:
        read_summary(run_dir)
    message = str(raised.value)
    assert isinstance(raised.value, ValueError)  # callers that caught ValueError keep catching it
    assert "\n" not in message and len(message) < 400, message
    assert str(run_dir / SUMMARY_FILE) in message and reason in message, message


def test_a_link_out_of_the_run_is_not_read_even_when_it_holds_a_summary(tmp_path: Path) -> None:
    _link(tmp_path / "run")
    assert read_summary(tmp_path / "elsewhere").agent == "greedy"
    with pytest.raises(SummaryError, match="symbolic link"):
        read_summary(tmp_path / "run")


# ------------------------------------------------------------------------------------------ the writer
def test_the_writer_replaces_the_file_in_one_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The text goes to a hidden temporary name first, so a reader never sees half a summary.json; a write
    that fails leaves the previous summary whole and no temporary file behind."""
    write_summary(tmp_path, _summary(status="running"))
    replaced: list[tuple[str, str]] = []
    real_replace = os.replace

    def spy(src: Any, dst: Any) -> None:
        replaced.append((str(src), str(dst)))
        assert json.loads(Path(dst).read_text())["status"] == "running"  # the old one is whole until now
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    write_summary(tmp_path, _summary(status="finished"))
    ((src, dst),) = replaced
    assert Path(dst) == tmp_path / SUMMARY_FILE and Path(src).parent == tmp_path
    assert Path(src).name != SUMMARY_FILE and Path(src).name.startswith(".")
    assert read_summary(tmp_path).status == "finished"

    def fail(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        write_summary(tmp_path, _summary(status="interrupted"))
    assert read_summary(tmp_path).status == "finished"
    assert sorted(p.name for p in tmp_path.iterdir()) == [SUMMARY_FILE]


def test_the_writer_refuses_what_no_reader_could_read(tmp_path: Path) -> None:
    with pytest.raises(SummaryError, match="metric.floor is missing"):
        write_summary(tmp_path, {**_summary(), "metric": {"name": "m", "direction": "lower", "target": 0.0}})
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------ the viewer
def test_the_viewer_parses_with_the_same_parse_and_names_what_it_cannot_read(tmp_path: Path) -> None:
    from researchbench.benchmark.viewer.catalog import Catalog
    from researchbench.benchmark.viewer.files import Results

    (tmp_path / "good").mkdir()
    write_summary(tmp_path / "good", _summary())
    _write(tmp_path / "bad", "{")
    catalog = Catalog(Results.open(tmp_path))
    folders = catalog.folders()
    assert catalog.summary(folders["good"]) == read_summary(tmp_path / "good")
    assert catalog.summary(folders["bad"]) is None
    good, bad = catalog.row(folders["good"]), catalog.row(folders["bad"])
    assert (good["agent"], good["metric"], good["best_val"], good["budget_experiments"]) == ("greedy", "mse", 4.0, 10.0)
    assert bad["agent"] == "?" and bad["status_note"].startswith("bad/summary.json is not JSON")


# ------------------------------------------------------------------------------------------ the rule
SOURCES = [p for folder in ("benchmark", "agents") for p in sorted((REPO / folder).rglob("*.py"))]
OWNER = REPO / "benchmark" / "records" / "summary.py"
READS = re.compile(r"""(SUMMARY_FILE|["']summary\.json["'])\s*\)?\s*\.(read_text|read_bytes|open)\(|"""
                   r"""(json\.loads?|open)\([^)\n]*(SUMMARY_FILE|summary\.json)""")


def test_no_module_but_the_records_own_parses_summary_json() -> None:
    """The file's name is a value in one module only (everyone else imports SUMMARY_FILE, to find runs), and
    nothing outside it reads the file and parses it: they call read_summary (or, in the viewer, which reads
    bytes through its own confinement, decode_summary)."""
    assert SOURCES and OWNER in SOURCES
    named, parsed = [], []
    for path in SOURCES:
        if path == OWNER:
            continue
        text = path.read_text()
        rel = path.relative_to(REPO)
        named += [f"{rel}:{node.lineno}" for node in ast.walk(ast.parse(text))
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and node.value.rstrip("/").endswith(SUMMARY_FILE) and len(node.value) < 40]
        parsed += [f"{rel}:{text.count(chr(10), 0, m.start()) + 1}" for m in READS.finditer(text)]
    assert named == [], f"name the file as SUMMARY_FILE (benchmark/records/summary.py): {named}"
    assert parsed == [], f"read summaries with read_summary (benchmark/records/summary.py): {parsed}"


def test_the_rule_would_catch_an_ad_hoc_reader() -> None:
    for line in ('json.loads((run_dir / "summary.json").read_text())', "(run / SUMMARY_FILE).read_text()",
                 'with open(run_dir / "summary.json") as fh:', "json.load(open(d / SUMMARY_FILE))"):
        assert READS.search(line), line


# ------------------------------------------------------------------------------------------ the docs
def test_every_field_is_documented() -> None:
    section = DOC.read_text().split("## summary.json", 1)[1]
    for cls in (RunSummary, MetricRecord, Scores, BestRecord, Steps, BudgetLimits, BudgetUsed, BudgetRecord):
        for f in fields(cls):
            if f.name != "raw":
                assert f"`{f.name}`" in section, f"{cls.__name__}.{f.name} is not in docs/records.md's summary.json"
    assert f"`format` (now {SUMMARY_FORMAT})" in section and "format 0" in section
    assert records.__doc__ and "format 0" in records.__doc__
