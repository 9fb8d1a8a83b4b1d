"""Each search agent end to end with scripted replies that really edit the code (on the toy task by default,
on the real causality task with `-m slow`), and a killed-then-resumed run that rebuilds the same tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, journal_records, killed_and_resumed, run_inprocess

CAUSALITY_SCRIPT = REPO / "examples" / "scripts" / "causality.yaml"
TOY_SCRIPT = FIXTURES / "scripts" / "toy"


def _finished(run_dir: Path) -> list[dict]:
    return [r["node"] for r in journal_records(run_dir) if r["kind"] == "finished"]


AIDE = ["agent.num_drafts=2", "agent.debug_prob=1.0"]
DRAFT_BUG_FIX_IMPROVE = [("draft", "ok"), ("draft", "buggy"), ("debug", "ok"), ("improve", "ok")]
SCRIPTS = {"toy": TOY_SCRIPT, "causality": CAUSALITY_SCRIPT}
MIN_PROMPT_CHARS = {"toy": 800, "causality": 1000}  # every prompt carries the task's description and code


# The same scripted sequence on both tasks: the toy task proves the agent loop in the default suite; a causality
# run (a real LightGBM baseline, a T-learner edit) costs about a minute of CPU, so those run with `-m slow`; the
# README quick start (test_end_to_end.py) keeps one real task in the default suite.
@pytest.mark.parametrize("agent, task, overrides, steps, expected", [
    ("aide", "toy", AIDE, 4, DRAFT_BUG_FIX_IMPROVE),
    pytest.param("aide", "causality", AIDE, 4, DRAFT_BUG_FIX_IMPROVE, marks=pytest.mark.slow),
    pytest.param("mcts", "causality", ["agent.num_children=2"], 4, DRAFT_BUG_FIX_IMPROVE, marks=pytest.mark.slow),
    pytest.param("evolutionary", "causality", ["agent.individuals_per_generation=2"], 5,
                 DRAFT_BUG_FIX_IMPROVE + [("improve", "ok")], marks=pytest.mark.slow),
])
def test_agent_edits_the_baseline_and_ends_with_a_valid_best(request, tmp_path: Path, agent, task, overrides, steps,
                                                             expected) -> None:
    request.getfixturevalue(task)  # the prepared workspace
    summary, _ = run_inprocess(f"agent={agent}", f"task={task}", f"budget.steps={steps}", f"results_dir={tmp_path}",
                               "llm=scripted", f"llm.script={SCRIPTS[task]}", *overrides)
    run_dir = Path(summary["run_dir"])
    nodes = _finished(run_dir)
    assert [(n["operator"], n["status"]) for n in nodes[1:]] == expected
    first_draft, buggy, fixed = nodes[1], nodes[2], nodes[3]
    assert first_draft["primary"] < nodes[0]["primary"]  # the first draft (toy: slope 2; causality: a T-learner) wins
    assert fixed["parents"] == [buggy["id"]] and buggy["parents"] == ["0000"]
    assert all(n["parents"][0] in {m["id"] for m in nodes[1:]} for n in nodes[4:])  # improvements build on drafts
    assert summary["best"]["test"] is not None and summary["best"]["node"] != "0000"
    assert summary["steps"]["experiments"] == steps
    calls = [c for n in nodes for c in n["llm_calls"]]
    assert calls and all(c["prompt_chars"] > MIN_PROMPT_CHARS[task]
                         and c["operator"] in ("draft", "debug", "improve", "analyze") for c in calls)


def _tree(run_dir: Path) -> list[tuple]:
    return [(n["id"], n["operator"], tuple(n["parents"]), n["tag"], tuple(sorted(n["files"].items())), n["status"],
             n["primary"]) for n in _finished(run_dir)]


def _policies(run_dir: Path) -> list:
    return [r["checkpoint"]["policy"] for r in journal_records(run_dir) if r["kind"] == "finished"]


@pytest.mark.parametrize("agent, extra", [("mcts", ["agent.num_children=2"]),
                                          ("evolutionary", ["agent.individuals_per_generation=2"])])
def test_killed_run_resumes_to_the_same_tree(toy, tmp_path: Path, agent, extra) -> None:
    # the uninterrupted and the resumed run in process, only the killed one as a CLI: each CLI start imports
    # litellm again (seconds of CPU); test_resume.py covers resuming through the CLI
    args = [f"agent={agent}", "task=toy", "budget.steps=5", "quiet=true", "llm=scripted", f"llm.script={TOY_SCRIPT}",
            *extra]
    ref_dir, run_dir = killed_and_resumed(tmp_path, args, agent)
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
                               "budget.steps=2", "agent.num_drafts=2", llm__mock_responses=replies)
    nodes = _finished(Path(summary["run_dir"]))
    executed = [n for n in nodes if n["executed"]]
    assert len(executed) == 3 and summary["steps"]["experiments"] == 2
    assert [n["analysis"] for n in executed] == ["The baseline underfits: slope 1 against data of slope 3.",
                                                 "Slope 3 fits exactly.", "Again exact."]
    for node in executed:
        assert [c.get("purpose") for c in node["llm_calls"]][-1] == "analysis"
    assert all(not n["analysis"] for n in nodes if not n["executed"])


@pytest.mark.parametrize("source, model", [(["llm=scripted", f"llm.script={TOY_SCRIPT}"], "scripted"),
                                           (["llm=mock"], "mock")])
def test_offline_replies_record_the_tokens_sent_and_received(toy, tmp_path: Path, source, model) -> None:
    """Not litellm's mock constants (10 + 20 a call, model gpt-4o-mini): the tokens of the prompt actually sent
    and the reply actually received, under the offline model's name (issue 26)."""
    import json

    import litellm

    from researchbench.benchmark.records.journal import BlobStore

    summary, _ = run_inprocess("agent=greedy", "task=toy", "budget.steps=2", f"results_dir={tmp_path}", *source)
    run_dir = Path(summary["run_dir"])
    blobs = BlobStore(run_dir / "blobs")
    calls = [c for n in _finished(run_dir) for c in n["llm_calls"]]
    assert calls and all(c["model"] == model and c["offline"] for c in calls)
    for call in calls:
        messages = json.loads(blobs.get(call["messages"]))
        reply = blobs.get(call["response"]).decode()
        assert call["prompt_tokens"] == litellm.token_counter(model="gpt-4o-mini", messages=messages) > 100
        assert call["completion_tokens"] == litellm.token_counter(model="gpt-4o-mini", text=reply,
                                                                  count_response_tokens=True)
    assert len({c["prompt_tokens"] for c in calls}) > 1 or len(calls) == 1  # prompts differ: so do their counts
    assert summary["budget"]["used"]["tokens"] == sum(c["prompt_tokens"] + c["completion_tokens"] for c in calls)
