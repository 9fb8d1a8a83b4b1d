"""K experiments in flight: claims, budgets, the agent's review, crash reports, the displays."""

from __future__ import annotations

import dataclasses
import io
import json
import threading
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import compose, journal_records
from engine_kit import TreePolicy, run_agent, write_step

from researchbench.benchmark.contract.agent_api import Action, Agent, AgentSpec, Analysis, Proposal, StatelessPolicy
from researchbench.benchmark.records.journal import Node, NodeStore


def finished(records: list[dict]) -> list[dict]:
    return [r["node"] for r in records if r["kind"] == "finished"]


def test_concurrent_claims_never_expand_a_node_twice(toy, tmp_path: Path) -> None:
    policy = TreePolicy()
    summary, _, records = run_agent(tmp_path, lambda: Agent(policy, {"write": write_step}),
                                    "parallel=4", "budget.steps=14")
    assert "crashed" not in summary["stop_reason"], summary["stop_reason"]
    assert summary["steps"]["experiments"] == 14
    assert policy.max_in_flight == 4  # K nodes really were in flight together
    nodes = finished(records)[1:]
    assert all(n["status"] == "ok" for n in nodes)
    by_parent: dict[str, int] = {}
    for n in nodes:
        by_parent[n["parents"][0]] = by_parent.get(n["parents"][0], 0) + 1
    assert max(by_parent.values()) <= 2
    # a node expanded while another expansion of it was in flight would show as overlapping intervals
    spans = {n["id"]: (n["created_at"], n["finished_at"], n["parents"][0]) for n in nodes}
    for a, (start_a, end_a, parent_a) in spans.items():
        for b, (start_b, end_b, parent_b) in spans.items():
            if a < b and parent_a == parent_b:
                assert end_a <= start_b or end_b <= start_a, f"{a} and {b} expanded {parent_a} at the same time"


def test_k8_with_budget_5_runs_exactly_5_experiments_all_at_once(toy, tmp_path: Path) -> None:
    barrier = threading.Barrier(5, timeout=60)  # breaks (and the step crashes) unless 5 operators run together

    def together(ctx, parents, action):
        barrier.wait()
        return write_step(ctx, parents, action)

    class Fan(StatelessPolicy):  # every action works from the baseline, so nothing holds a launch back
        def next_action(self, store, rng):
            return Action("write", ("0000",))

    summary, _, records = run_agent(tmp_path, lambda: Agent(Fan(), {"write": together}),
                                    "parallel=8", "budget.steps=5")
    launched = [r for r in records if r["kind"] == "pending" and r["step"] > 0]
    assert len(launched) == 5 and summary["steps"]["experiments"] == 5
    assert [n["status"] for n in finished(records)] == ["ok"] * 6
    assert summary["stop_reason"] == "used the budget of 5 experiments"


def test_analyzer_reviews_each_executed_node_once_and_its_failures_cost_nothing(toy, tmp_path: Path) -> None:
    from researchbench.benchmark.llm.accounting import LLMCall

    seen: list[str] = []

    def analyze(ctx, node: Node) -> Analysis:
        seen.append(node.id)
        if node.step == 2:
            raise ValueError("cannot read this one")
        if node.step == 3:
            return Analysis("", [LLMCall(model="m", error="HTTP 500")])
        return Analysis(f"{node.id} scored {node.primary}", [LLMCall(model="m", response="fine")])

    calls = []

    def sometimes_noop(ctx, parents, action):  # the 4th proposal changes nothing: no experiment, no review
        calls.append(action)
        proposal = write_step(ctx, parents, action)
        return dataclasses.replace(proposal, changed=False) if len(calls) == 4 else proposal

    summary, _, records = run_agent(
        tmp_path, lambda: Agent(TreePolicy(), {"write": sometimes_noop}, analyze=analyze), "budget.steps=5")
    nodes = {n["id"]: n for n in finished(records)}
    executed = sorted(i for i, n in nodes.items() if n["executed"])
    assert sorted(seen) == executed and "0004" not in seen  # once per executed node, baseline included
    assert nodes["0001"]["analysis"] == f"0001 scored {nodes['0001']['primary']}"
    assert nodes["0001"]["llm_calls"][-1]["purpose"] == "analysis"
    assert nodes["0002"]["analysis_error"].startswith("analyzer crashed: ValueError: cannot read this one")
    assert "test_parallel.py" in nodes["0002"]["analysis_error"]
    assert nodes["0003"]["analysis_error"] == "LLM call failed: HTTP 500"
    assert all(nodes[i]["status"] == "ok" for i in ("0002", "0003"))
    assert summary["steps"]["experiments"] == 5


def test_operator_crash_records_its_traceback_and_the_run_goes_on(toy, tmp_path: Path, caplog) -> None:
    def lookup(params: dict) -> Any:
        return {params: 1}  # TypeError: unhashable type: 'dict'

    def broken(ctx, parents, action):
        if len(ctx.store) == 2:
            lookup({})
        return write_step(ctx, parents, action)

    summary, lines, records = run_agent(tmp_path, lambda: Agent(TreePolicy(), {"write": broken}),
                                        "budget.steps=3")
    crashed = [n for n in finished(records) if n["status"] == "agent_failed"]
    assert len(crashed) == 1 and summary["steps"]["experiments"] == 3
    feedback = crashed[0]["feedback"]
    assert feedback.splitlines()[0] == "operator crashed: TypeError: unhashable type: 'dict'"
    assert "test_parallel.py\", line" in feedback and "in lookup" in feedback and "return {params: 1}" in feedback
    assert any("operator crashed: TypeError" in line for line in lines)
    logged = [r for r in caplog.records if r.exc_info and r.exc_info[0] is TypeError]
    assert logged, "the traceback was not logged"


def test_policy_crash_ends_the_search_with_its_traceback(toy, tmp_path: Path) -> None:
    class Fragile(TreePolicy):
        def next_action(self, store, rng):
            if len(store) == 3:
                raise KeyError("agenda")
            return super().next_action(store, rng)

    summary, lines, records = run_agent(tmp_path, lambda: Agent(Fragile(), {"write": write_step}), "budget.steps=6")
    assert summary["status"] == "finished" and summary["best"]["test"] is not None
    assert summary["stop_reason"] == "the policy crashed in next_action: KeyError: 'agenda'"
    (crash,) = [r for r in records if r["kind"] == "policy_crash"]
    assert "test_parallel.py" in crash["traceback"] and "raise KeyError" in crash["traceback"]


def test_gpu_shortage_for_k_jobs_is_one_clear_line(toy, tmp_path: Path, monkeypatch) -> None:
    from researchbench.benchmark.common.errors import UserError
    from researchbench.benchmark.tasks.manifest import Resources

    import researchbench.benchmark.run.engine as engine

    real = engine.load_task

    def wants_a_gpu(path):
        return dataclasses.replace(real(path), resources=Resources(gpus=1, cpus=1, memory_gb=2))

    monkeypatch.setattr(engine, "load_task", wants_a_gpu)
    with pytest.raises(UserError, match=r"parallel=3 .* each wanting 1 GPU\(s\), but executor.gpus lists 2; "
                                        r"give executor.gpus=\[0, 1, 2\]"):
        run_agent(tmp_path, lambda: Agent(TreePolicy(), {"write": write_step}), "parallel=3", "executor.gpus=[0,1]")


def test_parallel_below_one_is_refused(toy, tmp_path: Path) -> None:
    from researchbench.benchmark.common.errors import UserError

    with pytest.raises(UserError, match="parallel=0"):
        run_agent(tmp_path, lambda: Agent(TreePolicy(), {"write": write_step}), "parallel=0")


# ----------------------------------------------------------------------------------------- display
def test_rich_view_shows_budget_jobs_best_and_cost() -> None:
    from rich.console import Console

    from researchbench.benchmark.run.display import ANALYZING, PROPOSING, RichDisplay, Stats

    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    view = RichDisplay(console)
    view.attach(lambda: Stats(experiments=3, budget=10, best="mse=0.0123 (node 0002)", tokens=12345, usd=0.0421))
    view.job("0004", "improve <- 0002", PROPOSING)
    view.job("0005", "debug <- 0003", PROPOSING)
    view.job("0005", "debug <- 0003", ANALYZING)
    view.job("0006", "improve <- 0002", PROPOSING)
    view.job_done("0006")
    console.print(view.renderable())
    out = console.file.getvalue()
    assert "3/10" in out and "best mse=0.0123 (node 0002)" in out and "tokens 12,345" in out and "$0.0421" in out
    assert "0004" in out and "improve <- 0002" in out and "asking the LLM" in out
    assert "debug <- 0003" in out and "analyzing" in out
    assert "0006" not in out
    assert "\x1b[" in out  # rendered for a terminal


def test_non_tty_output_is_plain_lines(monkeypatch) -> None:
    from researchbench.benchmark.run.display import Display, RichDisplay, make_display

    monkeypatch.setattr("sys.stdout", io.StringIO())
    plain = make_display(None, quiet=False)
    assert type(plain) is Display
    plain.node_line("[0001] improve <- 0000 val mse=1.0")
    assert "[0001] improve" in __import__("sys").stdout.getvalue()

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdout", Tty())
    assert isinstance(make_display(None, quiet=False), RichDisplay)
    assert type(make_display(None, quiet=True)) is Display


def test_a_parallel_run_under_the_live_view(toy, tmp_path: Path) -> None:
    from rich.console import Console

    from researchbench.benchmark.run.display import RichDisplay

    console = Console(file=io.StringIO(), force_terminal=True, width=140)
    summary, lines, _ = run_agent(tmp_path, lambda: Agent(TreePolicy(), {"write": write_step}),
                                  "parallel=3", "budget.steps=4", display=RichDisplay(console))
    out = console.file.getvalue()
    assert lines == []  # everything went to the live view's console
    assert "[0001] write" in out and "summary: probe on toy" in out and summary["steps"]["experiments"] == 4


def test_llm_budget_with_three_in_flight_stops_launching_cleanly(toy, tmp_path: Path, monkeypatch) -> None:
    from conftest import run_inprocess

    from test_engine import SLOPE_3

    from llm_server import PRICED_CALL_USD, StubLLMServer, ok, priced_overrides

    monkeypatch.setenv("STUB_KEY", "x")
    # live calls priced by litellm; a cap of 2.05 calls' cost allows two. Calls already past the cap check
    # when it is reached still finish (up to parallel-1 more): the cap stops launching, it cannot recall
    with StubLLMServer() as server:
        server.always(ok(SLOPE_3))
        summary, _ = run_inprocess("agent=greedy", "task=toy", f"results_dir={tmp_path}", "budget.steps=10",
                                   f"budget.usd={2.05 * PRICED_CALL_USD}", "parallel=3", *priced_overrides(server))
    records = journal_records(Path(summary["run_dir"]))
    assert summary["status"] == "finished" and "LLM budget" in summary["stop_reason"]
    assert 2 <= summary["llm"]["calls"] <= 4 and summary["steps"]["experiments"] == summary["llm"]["calls"]
    first_abandoned = next(i for i, r in enumerate(records) if r["kind"] == "abandoned")
    assert not any(r["kind"] == "pending" for r in records[first_abandoned:]), "launched after the budget ran out"
    abandoned = {r["id"] for r in records if r["kind"] == "abandoned"}
    done = {r["node"]["id"] for r in records if r["kind"] == "finished"}
    launched = {r["id"] for r in records if r["kind"] == "pending"}
    assert abandoned and launched == done | abandoned and not done & abandoned
