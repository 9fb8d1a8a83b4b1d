"""Each search agent end to end on the real causality task with scripted replies that really edit the
code, and a killed-then-resumed run that rebuilds the same tree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, HANG_TIMEOUT_S, REPO, journal_records, run_cli, run_inprocess

CAUSALITY_SCRIPT = FIXTURES / "scripts" / "causality.yaml"
TOY_SCRIPT = FIXTURES / "scripts" / "toy"


def _finished(run_dir: Path) -> list[dict]:
    return [r["node"] for r in journal_records(run_dir) if r["kind"] == "finished"]


@pytest.mark.parametrize("agent, overrides, steps, expected", [
    ("aide", ["agent.num_drafts=2", "agent.debug_prob=1.0"], 4,
     [("draft", "ok"), ("draft", "buggy"), ("debug", "ok"), ("improve", "ok")]),
    # a causality run costs about a minute of CPU: aide's stays in the default suite, these two are slow
    pytest.param("mcts", ["agent.num_children=2"], 4,
                 [("draft", "ok"), ("draft", "buggy"), ("debug", "ok"), ("improve", "ok")], marks=pytest.mark.slow),
    pytest.param("evolutionary", ["agent.individuals_per_generation=2"], 5,
                 [("draft", "ok"), ("draft", "buggy"), ("debug", "ok"), ("improve", "ok"), ("improve", "ok")],
                 marks=pytest.mark.slow),
])
def test_agent_edits_causality_and_ends_with_a_valid_best(causality, tmp_path: Path, agent, overrides, steps,
                                                           expected) -> None:
    summary, _ = run_inprocess(f"agent={agent}", "task=causality", f"budget.steps={steps}", f"results_dir={tmp_path}",
                               "llm=scripted", f"llm.script={CAUSALITY_SCRIPT}", *overrides)
    run_dir = Path(summary["run_dir"])
    nodes = _finished(run_dir)
    assert [(n["operator"], n["status"]) for n in nodes[1:]] == expected
    t_learner, buggy, fixed = nodes[1], nodes[2], nodes[3]
    assert t_learner["primary"] < nodes[0]["primary"]  # the T-learner really is better on this data
    assert fixed["parents"] == [buggy["id"]] and buggy["parents"] == ["0000"]
    assert all(n["parents"][0] in {m["id"] for m in nodes[1:]} for n in nodes[4:])  # improvements build on drafts
    assert summary["best"]["test"] is not None and summary["best"]["node"] != "0000"
    assert summary["steps"]["experiments"] == steps
    calls = [c for n in nodes for c in n["llm_calls"]]
    assert calls and all(c["prompt_chars"] > 1000 and c["operator"] in ("draft", "debug", "improve", "analyze")
                         for c in calls)


def _tree(run_dir: Path) -> list[tuple]:
    return [(n["id"], n["operator"], tuple(n["parents"]), n["tag"], tuple(sorted(n["files"].items())), n["status"],
             n["primary"]) for n in _finished(run_dir)]


def _policies(run_dir: Path) -> list:
    return [r["checkpoint"]["policy"] for r in journal_records(run_dir) if r["kind"] == "finished"]


@pytest.mark.parametrize("agent, extra", [("mcts", ["agent.num_children=2"]),
                                          ("evolutionary", ["agent.individuals_per_generation=2"])])
def test_killed_run_resumes_to_the_same_tree(toy, tmp_path: Path, agent, extra) -> None:
    args = [f"agent={agent}", "task=toy", "budget.steps=5", "quiet=true", "llm=scripted", f"llm.script={TOY_SCRIPT}",
            *extra]
    reference = tmp_path / "reference"
    assert run_cli(*args, f"results_dir={reference}").returncode == 0
    (ref_dir,) = (reference / agent / "toy").iterdir()

    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, str(REPO / "run_agent_benchmark.py"), *args, f"results_dir={killed}"],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + HANG_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        journal = next(killed.glob(f"{agent}/toy/*/journal.jsonl"), None)
        text = journal.read_text() if journal else ""
        if sum(json.loads(line)["kind"] == "finished" for line in text[:text.rfind("\n") + 1].splitlines()) >= 3:
            os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.005)
    proc.wait(timeout=30)
    resumed = run_cli(*args, f"results_dir={killed}")
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stdout
    (run_dir,) = (killed / agent / "toy").iterdir()
    assert _tree(run_dir) == _tree(ref_dir)
    assert _policies(run_dir) == _policies(ref_dir)
    assert any(n["status"] == "buggy" for n in _finished(ref_dir))  # the resumed stretch had a debug chain to rebuild


def test_aide_reviews_every_executed_node(toy, tmp_path: Path) -> None:
    """AIDE's analyze operator runs once per executed node (baseline included), costs no experiment,
    and its text lands on the node; a no-op edit gets no review."""
    slope3 = "Plan: slope 3.\n\n### FILE: params.json\n```json\n{\"slope\": 3.0}\n```\n"
    replies = ["The baseline underfits: slope 1 against data of slope 3.", slope3, "Slope 3 fits exactly.",
               "no edits here", slope3, "Again exact."]
    summary, _ = run_inprocess("agent=aide", "task=toy", "llm=mock", f"results_dir={tmp_path}",
                               "budget.steps=2", llm__mock_responses=replies)
    nodes = _finished(Path(summary["run_dir"]))
    executed = [n for n in nodes if n["executed"]]
    assert len(executed) == 3 and summary["steps"]["experiments"] == 2
    assert [n["analysis"] for n in executed] == ["The baseline underfits: slope 1 against data of slope 3.",
                                                 "Slope 3 fits exactly.", "Again exact."]
    for node in executed:
        assert [c.get("purpose") for c in node["llm_calls"]][-1] == "analysis"
    assert all(not n["analysis"] for n in nodes if not n["executed"])
