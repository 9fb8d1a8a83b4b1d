"""SIGKILL a real run at several points, run the same command again, compare with an uninterrupted run.

Sequentially (parallel=1) and with four experiments in flight (parallel=4), where the kill leaves
several nodes pending and the resumed run must re-run exactly those.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import (complete_journal_records, finished_at_least, journal_records, kill_run_when, run_cli,
                      run_inprocess)

ARGS = ["agent=optuna", "task=toy", "budget.steps=6", "quiet=true"]
# random sampling only (no TPE), so each step's choice depends on (seed, step) alone, not on the
# order in which parallel results arrived; the sleepy task keeps several experiments in flight
ARGS_K4 = ["agent=optuna", "task=sleepy", "budget.steps=10", "parallel=4", "agent.n_startup_trials=1000",
           "quiet=true"]


def _nodes(run_dir: Path) -> list[tuple]:
    """What must match between runs: each node's identity, choice, files and score."""
    return [(n["id"], n["operator"], tuple(n["parents"]), json.dumps(n["hints"], sort_keys=True),
             tuple(sorted(n["files"].items())), n["status"], n["primary"])
            for n in (r["node"] for r in journal_records(run_dir) if r["kind"] == "finished")]


def _run_dir(results: Path) -> Path:
    (run_dir,) = results.glob("optuna/*/seed*")
    return run_dir


def _uninterrupted(results: Path, args: list[str]) -> tuple[Path, dict]:
    """The reference run, in process (a CLI start costs seconds of imports; the runs under test are CLIs)."""
    summary, _ = run_inprocess(*args, f"results_dir={results}")
    assert summary["status"] == "finished", summary
    return Path(summary["run_dir"]), summary


@pytest.fixture(scope="module")
def reference(toy, tmp_path_factory) -> tuple[list[tuple], dict, Path]:
    results = tmp_path_factory.mktemp("reference")
    run_dir, summary = _uninterrupted(results, ARGS)
    return _nodes(run_dir), summary, results


def _pending_after(n: int):
    return lambda records: bool(records) and records[-1]["kind"] == "pending" and \
        sum(r["kind"] == "finished" for r in records) == n


def _resume(results: Path, args: list[str]) -> tuple[Path, list[dict]]:
    """Resume the killed run in `results` through the CLI: its run dir and journal records, once it exited 0,
    said it resumed, and finished no node twice."""
    proc = run_cli(*args, f"results_dir={results}")
    assert proc.returncode == 0, proc.stderr
    assert "resuming" in proc.stdout
    run_dir = _run_dir(results)
    records = journal_records(run_dir)
    ids = [r["node"]["id"] for r in records if r["kind"] == "finished"]
    assert len(ids) == len(set(ids)), "a node finished twice"
    return run_dir, records


@pytest.mark.parametrize("label, condition", [
    ("in the baseline", _pending_after(0)),
    ("after two nodes", finished_at_least(2)),
    ("mid-experiment", _pending_after(4)),
    ("in the final test", finished_at_least(7)),
])
def test_sigkill_then_resume_matches_uninterrupted_run(reference, tmp_path: Path, label: str, condition) -> None:
    nodes, summary, _ = reference
    kill_run_when(tmp_path, ARGS, condition)
    run_dir, records = _resume(tmp_path, ARGS)
    assert _nodes(run_dir) == nodes
    assert sum(r["kind"] == "header" for r in records) == 1
    assert sum(r["kind"] == "final" for r in records) == 1
    pending = [r["id"] for r in records if r["kind"] == "pending"]
    assert len(pending) - len(set(pending)) <= 1, "more than the one in-flight step was re-run"
    resumed = json.loads((run_dir / "summary.json").read_text())
    assert resumed["best"] == summary["best"] and resumed["steps"] == summary["steps"]


def test_finished_run_is_a_noop_that_reprints_the_summary(reference) -> None:
    results = reference[2]  # the other tests hold what they compare with: a no-op that wrote would fail here
    journal = _run_dir(results) / "journal.jsonl"
    before = journal.read_bytes()
    proc = run_cli(*ARGS, f"results_dir={results}")
    assert proc.returncode == 0
    assert "already finished" in proc.stdout and "summary: optuna on toy" in proc.stdout
    assert journal.read_bytes() == before


def _in_flight(records: list[dict]) -> int:
    done = {r["node"]["id"] for r in records if r["kind"] == "finished"}
    return len({r["id"] for r in records if r["kind"] == "pending"} - done)


@pytest.fixture(scope="module")
def reference_k4(tmp_path_factory) -> tuple[set[tuple], dict]:
    from conftest import _prepared

    _prepared("sleepy")
    run_dir, summary = _uninterrupted(tmp_path_factory.mktemp("reference_k4"), ARGS_K4)
    return _node_set(run_dir), summary


def _node_set(run_dir: Path) -> set[tuple]:
    return {(n["id"], n["operator"], tuple(n["parents"]), tuple(sorted(n["files"].items())))
            for n in (r["node"] for r in journal_records(run_dir) if r["kind"] == "finished")}


@pytest.mark.parametrize("label, condition", [
    ("early, several in flight", lambda rs: sum(r["kind"] == "finished" for r in rs) >= 2 and _in_flight(rs) >= 3),
    ("late, several in flight", lambda rs: sum(r["kind"] == "finished" for r in rs) >= 6 and _in_flight(rs) >= 2),
    ("in the final test", finished_at_least(11)),
])
def test_sigkill_with_four_in_flight_then_resume(reference_k4, tmp_path: Path, label: str, condition) -> None:
    nodes, summary = reference_k4
    kill_run_when(tmp_path, ARGS_K4, condition)
    killed = complete_journal_records(_run_dir(tmp_path))
    finished_before = {r["node"]["id"] for r in killed if r["kind"] == "finished"}
    run_dir, records = _resume(tmp_path, ARGS_K4)
    assert _node_set(run_dir) == nodes
    rerun = [r["id"] for r in records[len(killed):] if r["kind"] == "pending"]
    assert not set(rerun) & finished_before, "a finished node was run again"
    pending = [r["id"] for r in records if r["kind"] == "pending"]
    assert len(pending) - len(set(pending)) <= 4, "more than the four in-flight nodes were re-run"
    assert sum(r["kind"] == "final" for r in records) == 1
    resumed = json.loads((run_dir / "summary.json").read_text())
    assert resumed["steps"] == summary["steps"]
