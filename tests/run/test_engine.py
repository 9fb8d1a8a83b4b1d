"""The run loop end to end on the toy task: budgets, statuses, journal, blobs, summary, final test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import journal_records, run_inprocess

SLOPE_3 = """Plan: the data follow y = 3x, so use slope 3.

params.json
<<<<<<< SEARCH
  "slope": 1.0
=======
  "slope": 3.0
>>>>>>> REPLACE
"""
CRASH = """Plan: try a different model.

### FILE: model.py
```python
def predict(x, params):
    raise RuntimeError("boom")
```
"""
FIX = """Plan: fix the crash.

### FILE: model.py
```python
def predict(x, params):
    return params["slope"] * x * 1.0
```
"""
BAD_EDIT = """Plan: tweak.

model.py
<<<<<<< SEARCH
this text is not in the file
=======
return 0
>>>>>>> REPLACE
"""


def test_optuna_runs_budget_and_scores_hidden_test(toy, tmp_path: Path) -> None:
    summary, out = run_inprocess("agent=optuna", "task=toy", f"results_dir={tmp_path}", "budget.steps=6")
    assert summary["status"] == "finished"
    assert summary["steps"]["experiments"] == 6
    assert summary["baseline"]["val"] == 5.0  # slope 1 on val x = 0.5, 1.5
    assert summary["best"]["val"] < summary["baseline"]["val"]
    assert summary["best"]["test"] is not None and summary["baseline"]["test"] == 20.0
    assert summary["sandbox"] in ("bwrap", "none")
    assert "provenance" in summary and summary["provenance"]["task_version"] == "1.0.0"
    run_dir = Path(summary["run_dir"])
    records = journal_records(run_dir)
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "header" and kinds[-1] == "final" and kinds.count("final") == 1
    finished = [r["node"] for r in records if r["kind"] == "finished"]
    assert [n["id"] for n in finished] == [f"{i:04d}" for i in range(7)]
    assert all(n["operator"] == "tune" for n in finished[1:])
    assert (run_dir / "config.yaml").exists()
    assert "[0003] tune" in out and "summary: optuna on toy" in out


def test_greedy_improves_debugs_and_records_failed_edits(toy, tmp_path: Path) -> None:
    summary, out = run_inprocess(
        "agent=greedy", "task=toy", f"results_dir={tmp_path}", "budget.steps=3", "llm=mock",
        llm__mock_responses=[BAD_EDIT, SLOPE_3, CRASH, FIX])
    nodes = [r["node"] for r in journal_records(Path(summary["run_dir"])) if r["kind"] == "finished"]
    statuses = [(n["operator"], n["status"]) for n in nodes]
    assert statuses == [("baseline", "ok"), ("improve", "edit_failed"), ("improve", "ok"), ("improve", "buggy"),
                        ("debug", "ok")]
    assert "SEARCH does not match" in nodes[1]["feedback"]
    assert nodes[2]["primary"] == 0.0 and nodes[4]["parents"] == [nodes[3]["id"]]
    # the failed edit spent no experiment: 3 experiments for 4 agent steps
    assert summary["steps"]["experiments"] == 3 and summary["steps"]["nodes"] == 5
    assert summary["best"]["node"] == "0002" and summary["best"]["test"] == 0.0
    assert summary["best"]["normalized_test"] == pytest.approx(1.0, abs=1e-4)
    assert summary["llm"]["calls"] == 4
    # mock replies came from no provider: they cost nothing, and every place that shows a cost says why
    assert summary["budget"]["used"]["usd"] == 0 and summary["budget"]["used"]["offline_llm"] is True
    assert "LLM $0.0000 (offline LLM)" in out and "$0.0000 (offline LLM)" in out.split("summary:")[0]
    assert all(c["usd"] == 0 and c["offline"] for n in nodes for c in n["llm_calls"])
    # prompts and responses are stored per node, content-addressed
    run_dir = Path(summary["run_dir"])
    call = nodes[2]["llm_calls"][0]
    blob = run_dir / "blobs" / call["response"][:2] / call["response"][2:]
    assert blob.read_text() == SLOPE_3
    messages = json.loads((run_dir / "blobs" / call["messages"][:2] / call["messages"][2:]).read_text())
    assert "y = slope" not in messages[0]["content"] and "model.py" in messages[1]["content"]


def test_usd_cap_stops_the_run_cleanly(toy, tmp_path: Path, monkeypatch) -> None:
    from llm_server import PRICED_CALL_USD, StubLLMServer, ok, priced_overrides

    monkeypatch.setenv("STUB_KEY", "x")
    with StubLLMServer() as server:  # live calls priced by litellm: a cap of 2.05 calls' cost allows two
        server.script(ok(SLOPE_3), ok(BAD_EDIT))
        summary, out = run_inprocess("agent=greedy", "task=toy", f"results_dir={tmp_path}", "budget.steps=10",
                                     f"budget.usd={2.05 * PRICED_CALL_USD}", *priced_overrides(server))
    assert summary["status"] == "finished"
    assert "LLM budget" in summary["stop_reason"]
    assert summary["llm"]["calls"] == 2 and summary["best"]["test"] == 0.0
    used = summary["budget"]["used"]  # a real call keeps its cost
    assert used["usd"] == round(2 * PRICED_CALL_USD, 6) and used["offline_llm"] is False
    assert f"LLM ${2 * PRICED_CALL_USD:.4f}" in out and "offline" not in out


def test_unexecuted_steps_spend_nothing_and_storage_holds_only_changes(toy, tmp_path: Path) -> None:
    nothing = "Plan: the current solution is already right; no changes."
    summary, _ = run_inprocess("agent=greedy", "task=toy", f"results_dir={tmp_path}", "budget.steps=4",
                               "budget.max_unexecuted_in_a_row=3", llm__mock_responses=[SLOPE_3, nothing])
    nodes = [r["node"] for r in journal_records(Path(summary["run_dir"])) if r["kind"] == "finished"]
    assert [n["status"] for n in nodes] == ["ok", "ok", "no_op", "edit_failed", "no_op"]
    assert summary["steps"]["experiments"] == 1
    assert "3 steps in a row ran no experiment" in summary["stop_reason"]
    digests = {d for n in nodes for d in n["files"].values()}
    assert len(digests) == 3  # model.py once, params.json with slope 1 and with slope 3


def test_llm_faults_become_recorded_failed_steps(toy, tmp_path: Path, monkeypatch) -> None:
    """Replies the endpoint gave but the agent cannot use are the agent's failed steps; an endpoint
    fault that a retry gets past is invisible. (Faults outlasting the retries abort: test_outage.py.)"""
    from llm_server import BAD_REQUEST, EMPTY, HANG, StubLLMServer, ok

    monkeypatch.setenv("STUB_KEY", "x")
    with StubLLMServer(hang_s=5) as server:
        # step 1: a rejected request (not retried); step 2: empty replies (retries exhausted);
        # step 3: a timeout, then a real edit
        server.script(BAD_REQUEST, EMPTY, EMPTY, HANG, ok(SLOPE_3))
        summary, out = run_inprocess(
            "agent=greedy", "task=toy", f"results_dir={tmp_path}", "budget.steps=1", "llm=openai_compatible",
            "llm.model=openai/test-model", f"llm.api_base={server.url}", "llm.api_key_env=STUB_KEY",
            "llm.max_retries=1", "llm.retry_backoff_s=0.01", "llm.timeout_s=1")
    nodes = [r["node"] for r in journal_records(Path(summary["run_dir"])) if r["kind"] == "finished"]
    assert [n["status"] for n in nodes] == ["ok", "agent_failed", "agent_failed", "ok"]
    assert all("LLM call failed" in n["feedback"] for n in nodes[1:3])
    assert [n["llm_calls"][0]["attempts"] for n in nodes[1:]] == [1, 2, 2]
    assert summary["best"]["val"] == 0.0 and summary["steps"]["experiments"] == 1


def test_recorded_run_replays_identically_offline(toy, tmp_path: Path, monkeypatch) -> None:
    from llm_server import StubLLMServer, ok

    monkeypatch.setenv("STUB_KEY", "x")
    common = ["agent=greedy", "task=toy", "budget.steps=2", "llm=openai_compatible", "llm.model=openai/test-model",
              "llm.api_key_env=STUB_KEY", f"llm.cache_dir={tmp_path / 'cache'}"]
    with StubLLMServer() as server:
        server.script(ok(SLOPE_3), ok(CRASH), ok(FIX))
        recorded, _ = run_inprocess(*common, "llm.cache=record", f"llm.api_base={server.url}",
                                    f"results_dir={tmp_path / 'a'}")
        url = server.url
    replayed, _ = run_inprocess(*common, "llm.cache=replay", f"llm.api_base={url}", f"results_dir={tmp_path / 'b'}")

    def trace(summary):
        return [(n["id"], n["operator"], n["files"], n["status"], n["primary"],
                 [c["response"] for c in n["llm_calls"]])
                for n in (r["node"] for r in journal_records(Path(summary["run_dir"])) if r["kind"] == "finished")]

    assert trace(replayed) == trace(recorded)
    assert replayed["llm"]["cached_calls"] == recorded["llm"]["calls"] == 2 and replayed["best"]["test"] == recorded["best"]["test"]
    assert replayed["budget"]["used"]["offline_llm"] is True and replayed["budget"]["used"]["usd"] == 0
    assert recorded["budget"]["used"]["offline_llm"] is False


def test_summary_lines_count_in_words_and_align(toy, tmp_path: Path) -> None:
    summary, out = run_inprocess("task=toy", "budget.steps=1", f"results_dir={tmp_path}")
    assert "budget=1 experiment," in out and "steps: 1 experiment, " in out
    assert " 1 experiments" not in out
    lines = out.splitlines()
    base = next(line for line in lines if line.strip().startswith("baseline"))
    best = next(line for line in lines if line.strip().startswith("best (node"))
    assert base.index(" val ") == best.index(" val ")
    assert base.index("hidden test") == best.index("hidden test")


BUSY = """Plan: think harder.

### FILE: model.py
```python
while True:
    pass
```
"""


def test_step_limit_and_compute_budget_are_cpu_time_and_shown_to_the_agent(toy, tmp_path: Path) -> None:
    """Each executed node records wall and CPU seconds; a CPU-bound step is killed at its CPU-time
    limit; the compute budget counts CPU time and says so; the agent sees its CPU time per experiment."""
    replies = ["The baseline underfits.", BUSY, "It never finished."]
    summary, _ = run_inprocess("agent=aide", "task=toy", "llm=mock", f"results_dir={tmp_path}", "budget.steps=1",
                               "budget.step_timeout_s=3", llm__mock_responses=replies)
    run_dir = Path(summary["run_dir"])
    records = journal_records(run_dir)
    baseline, busy = [r["node"] for r in records if r["kind"] == "finished"]
    assert baseline["status"] == "ok" and baseline["clock"] == "cpu"
    assert baseline["seconds"] > 0 and 0 < baseline["cpu_seconds"] < 3
    assert busy["status"] == "buggy" and busy["timed_out"] and busy["clock"] == "cpu" and busy["cpu_seconds"] >= 3
    assert busy["bug_reason"] == f"killed: over the CPU-time limit of 3 s (used {busy['cpu_seconds']:.1f} s)"
    assert busy["peak_open_files"] >= 3  # the files its processes held (stdin, stdout, stderr at least)
    assert baseline["wall_limit_s"] == busy["wall_limit_s"] > 3  # the CPU clock's wall backstop, shown in prompts

    assert summary["budget"]["clock"] == "cpu"
    cpu_hours = (baseline["cpu_seconds"] + busy["cpu_seconds"]) / 3600
    assert summary["budget"]["used"]["compute_hours"] == pytest.approx(cpu_hours, abs=1e-5)
    final = next(r for r in records if r["kind"] == "final")
    assert final["baseline"]["clock"] == "cpu" and final["baseline"]["cpu_seconds"] > 0

    def prompt(call: dict) -> str:
        return (run_dir / "blobs" / call["messages"][:2] / call["messages"][2:]).read_text()

    draft = next(c for c in busy["llm_calls"] if c.get("purpose") != "analysis")
    assert "killed at 3 s of CPU time, all its processes and threads summed" in prompt(draft)
    assert "of 3600 s of CPU time in all" in prompt(draft)  # the compute budget, in the limit's unit
    review = next(c for c in busy["llm_calls"] if c.get("purpose") == "analysis")
    assert f"{busy['cpu_seconds']:.1f} s CPU / {busy['seconds']:.1f} s wall" in prompt(review)
    assert "of the 3 s CPU limit: killed at the limit" in prompt(review)


def test_a_death_by_signal_is_named_and_a_bare_sigkill_is_not_blamed_on_the_code() -> None:
    """An agent read "exit code -9" as a bug of its own (openevolve on fairness): the step names the signal,
    and for SIGKILL that no limit of the job explains, the likely cause and remedy."""
    from researchbench.benchmark.executors.base import JobResult
    from researchbench.benchmark.run.experiment import _job_problem

    killed = _job_problem(JobResult(-9, False, 3.0), 120.0)
    assert killed.startswith("exit code -9") and "SIGKILL" in killed and "memory" in killed
    assert "SIGTERM" in _job_problem(JobResult(-15, False, 3.0), 120.0)
    assert _job_problem(JobResult(1, False, 3.0), 120.0) == "exit code 1"


def test_a_sigkill_from_outside_the_job_is_run_once_more_and_not_charged_to_the_code(toy, tmp_path: Path) -> None:
    """A SIGKILL that no limit of the job and no out-of-memory kill explains (the RLIMIT_CPU backstop set too
    tight once did this to causal_discovery jobs, an experiment and a debug step each) is not charged to the
    code: the job runs once more, both attempts' CPU and wall time charged (a job can kill itself to get a second
    limit) and the killed one's wall time kept apart in the timings; a job that kills itself dies twice and is
    told so."""
    import time
    from concurrent.futures import Future

    from researchbench.benchmark.executors.base import JobResult
    from researchbench.benchmark.executors.local import LocalExecutor
    from researchbench.benchmark.executors.local.backend import host_oom_kills
    from researchbench.benchmark.run.experiment import run_phase

    class KilledOnce:
        """The executor, except that its first job ends as another process's SIGKILL looks to the harness."""

        def __init__(self, inner: LocalExecutor) -> None:
            self.inner, self.killed = inner, 0

        def __getattr__(self, name: str):
            return getattr(self.inner, name)

        def submit(self, job):
            if self.killed:
                return self.inner.submit(job)
            self.killed += 1
            time.sleep(2.0)  # the killed attempt's wall time
            done: Future = Future()
            done.set_result(JobResult(-9, False, 1.0, cpu_seconds=5.0, killed_from_outside=True))
            return done

    with LocalExecutor() as ex:
        started = time.monotonic()
        rerun = run_phase(toy, {}, "val", KilledOnce(ex), tmp_path / "once", 60)
        elapsed = time.monotonic() - started
        assert rerun.ok and rerun.primary is not None, rerun.bug_reason
        assert rerun.timings["killed_attempt"] >= 2.0 and 2.0 <= rerun.seconds <= elapsed
        assert rerun.cpu_seconds is not None and rerun.cpu_seconds >= 5.0  # the killed attempt's CPU is charged
        suicide = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"
        twice = run_phase(toy, {"model.py": suicide}, "val", ex, tmp_path / "twice", 60)
    assert twice.exit_code == -9 and "SIGKILL" in twice.bug_reason
    if host_oom_kills() is not None:  # the host says how many OOM kills there were: none here, so no OOM kill
        assert "twice" in twice.bug_reason and "smaller peak memory" not in twice.bug_reason
