"""An outage is not a result: infrastructure failures abort a run (exit 3, status `aborted`, the cause in
summary.json and the journal), the same command resumes it once the cause is gone, and a run whose
LLM answered but whose every experiment failed stays a finished (bad) result. Offline: the loopback
LLM server, litellm's mock, scripted replies, the Modal stand-in."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from researchbench.benchmark.common.errors import InfrastructureFailure
from conftest import journal_records, run_cli, run_inprocess
from llm_server import UNAUTHORIZED, UNAVAILABLE, StubLLMServer, ok
from test_engine import CRASH

SLOPE = """Plan: the data follow y = 3x, so use slope {new}.

params.json
<<<<<<< SEARCH
  "slope": {old}
=======
  "slope": {new}
>>>>>>> REPLACE
"""
RESUME = "; re-run the same command to resume"


def _free_port() -> int:
    """A loopback port nothing listens on (a server was there a moment ago)."""
    server = StubLLMServer().start()
    server.stop()
    return server.port


def _stub_llm(url: str) -> list[str]:
    return ["agent=greedy", "task=toy", "llm=openai_compatible", "llm.model=openai/test-model",
            f"llm.api_base={url}", "llm.max_retries=1", "llm.retry_backoff_s=0.01", "llm.timeout_s=5"]


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def _finished_ids(run_dir: Path) -> list[str]:
    return [r["node"]["id"] for r in journal_records(run_dir) if r["kind"] == "finished"]


def _aborted(run_dir: Path) -> list[dict]:
    return [r for r in journal_records(run_dir) if r["kind"] == "aborted"]


def _only_run(results: Path) -> Path:
    (run_dir,) = results.glob("*/*/seed*")
    return run_dir


def test_unreachable_llm_aborts_with_exit_3_and_the_same_command_resumes(toy, tmp_path: Path) -> None:
    port = _free_port()
    args = [*_stub_llm(f"http://127.0.0.1:{port}/v1"), "budget.steps=2", "quiet=true", f"results_dir={tmp_path}"]
    down = run_cli(*args)
    assert down.returncode == 3, down.stderr
    line = down.stderr.strip().splitlines()[-1]
    assert line.startswith(f"aborted: the LLM endpoint openai/test-model at http://127.0.0.1:{port}/v1 failed all "
                           "2 attempt(s) of a call") and line.endswith(RESUME), line
    assert "Traceback" not in down.stderr
    run_dir = _only_run(tmp_path)
    summary = _summary(run_dir)
    assert summary["status"] == "aborted" and summary["abort_cause"] in line
    assert summary["best"]["test"] is None and summary["steps"]["experiments"] == 0
    (record,) = _aborted(run_dir)
    assert record["source"] == "llm" and record["details"]["kind"] == "down" and record["cause"] == summary["abort_cause"]
    assert _finished_ids(run_dir) == ["0000"], "the step the outage interrupted must not be recorded"

    with StubLLMServer(port=port) as server:  # the endpoint is back, at the same address
        server.script(ok(SLOPE.format(old="1.0", new="3.0")), ok(SLOPE.format(old="3.0", new="2.5")))
        _, back = run_inprocess(*args)  # the same command, in process: a second CLI start costs seconds of imports
    assert "resuming" in back and "it was aborted: the LLM endpoint" in back
    summary = _summary(run_dir)
    assert summary["status"] == "finished" and "abort_cause" not in summary
    assert _finished_ids(run_dir) == ["0000", "0001", "0002"]  # the baseline was not run again
    assert summary["steps"]["experiments"] == 2 and summary["best"]["test"] == 0.0
    assert len(_aborted(run_dir)) == 1  # the journal keeps what happened


def test_refused_credentials_abort_at_once(toy, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("STUB_KEY", "wrong")
    with StubLLMServer() as server:
        server.always(UNAUTHORIZED)
        with pytest.raises(InfrastructureFailure) as raised:
            run_inprocess(*_stub_llm(server.url), "llm.api_key_env=STUB_KEY", "llm.max_retries=3",
                          f"results_dir={tmp_path}")
    assert server.hits == 1, "refused credentials are not retried"
    assert "refused the credentials" in raised.value.cause and "$STUB_KEY" in raised.value.fix
    run_dir = _only_run(tmp_path)
    assert _summary(run_dir)["status"] == "aborted"
    assert _aborted(run_dir)[0]["details"]["kind"] == "auth"


def test_run_end_hook_hears_of_an_aborted_run(toy, tmp_path: Path, monkeypatch) -> None:
    """Trackers close their run on an outage too: the hook gets the aborted summary with its cause."""
    from researchbench.benchmark.plugins.manager import get_registry, hookimpl

    ended: list[dict] = []

    class Tracker:
        @hookimpl
        def researchbench_on_run_end(self, summary, run):
            ended.append({"status": summary["status"], "cause": summary.get("abort_cause"), **run})

    registry = get_registry()
    registry.pm.register(Tracker(), name="end-tracker")
    monkeypatch.setenv("STUB_KEY", "wrong")
    try:
        with StubLLMServer() as server:
            server.always(UNAUTHORIZED)
            with pytest.raises(InfrastructureFailure):
                run_inprocess(*_stub_llm(server.url), "llm.api_key_env=STUB_KEY", f"results_dir={tmp_path}")
    finally:
        registry.pm.unregister(name="end-tracker")
    assert [(e["status"], e["task"]) for e in ended] == [("aborted", "toy")]
    assert "refused the credentials" in ended[0]["cause"]


def test_outage_with_two_steps_in_flight_records_neither(toy, tmp_path: Path) -> None:
    with StubLLMServer() as server:
        server.always(UNAVAILABLE)
        with pytest.raises(InfrastructureFailure, match="failed all 2 attempt"):
            run_inprocess(*_stub_llm(server.url), "parallel=2", "budget.steps=4", f"results_dir={tmp_path}")
    run_dir = _only_run(tmp_path)
    assert _finished_ids(run_dir) == ["0000"]
    pending = {r["id"] for r in journal_records(run_dir) if r["kind"] == "pending"}
    assert {"0001", "0002"} <= pending, "both steps were in flight; resume re-runs them"


def test_llm_answering_with_code_that_always_fails_is_a_finished_result(toy, tmp_path: Path) -> None:
    script = tmp_path / "crash.yaml"
    script.write_text(json.dumps([CRASH] * 4))
    run_inprocess("agent=greedy", "task=toy", "llm=scripted", f"llm.script={script}", "budget.steps=2", "quiet=true",
                  f"results_dir={tmp_path / 'results'}")  # in process: no CLI start; a finished run's CLI exits 0
    run_dir = _only_run(tmp_path / "results")
    summary = _summary(run_dir)
    assert summary["status"] == "finished" and "abort_cause" not in summary and not _aborted(run_dir)
    nodes = [r["node"] for r in journal_records(run_dir) if r["kind"] == "finished"]
    experiments = [n for n in nodes[1:] if n["executed"]]
    assert len(experiments) == 2 and all(n["status"] == "buggy" for n in experiments)
    assert summary["steps"]["experiments"] == 2 and summary["best"]["node"] == "0000"


def test_llm_that_never_gives_a_usable_reply_aborts(toy, tmp_path: Path) -> None:
    with pytest.raises(InfrastructureFailure, match="no usable reply in 2 calls") as raised:
        run_inprocess("agent=greedy", "task=toy", "llm=mock", "llm.retry_backoff_s=0.01",
                      "budget.max_unexecuted_in_a_row=2", f"results_dir={tmp_path}", llm__mock_responses=[""])
    assert "empty reply" in raised.value.cause
    run_dir = _only_run(tmp_path)
    assert _summary(run_dir)["status"] == "aborted"
    assert _finished_ids(run_dir) == ["0000", "0001", "0002"]  # the failed calls are on record


class _ForkFailingMachine:
    """Stands in for a machine whose process limit a concurrent run exhausted: while `saturated`, every
    experiment job (val or test phase; the evaluator runs apart) dies at once as a failed fork does,
    through the real local executor and sandbox."""

    FORK_FAILED = "import sys; sys.exit('BlockingIOError: [Errno 11] Resource temporarily unavailable')"

    def __init__(self, inner):
        self.inner, self.saturated = inner, True

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def submit(self, job):
        if self.saturated and not job.local_only:
            job = dataclasses.replace(job, argv=(sys.executable, "-c", self.FORK_FAILED))
        return self.inner.submit(job)


def test_baseline_that_cannot_run_aborts_and_is_rerun_on_resume(toy, tmp_path: Path, monkeypatch) -> None:
    from researchbench.benchmark.plugins.manager import get_registry

    spec = get_registry().executors["local"]
    machines: list[_ForkFailingMachine] = []

    def build(cfg):
        machines.append(_ForkFailingMachine(spec.build(cfg)))
        machines[-1].saturated = len(machines) == 1  # the other run has ended by the second attempt
        return machines[-1]

    monkeypatch.setitem(get_registry().executors, "local", dataclasses.replace(spec, build=build))
    args = ("agent=optuna", "task=toy", "budget.steps=1", f"results_dir={tmp_path}")
    with pytest.raises(InfrastructureFailure) as raised:
        run_inprocess(*args)
    assert raised.value.source == "baseline"
    assert raised.value.cause == "the task's own baseline (node 0000) did not run: exit code 1"
    assert "setup.py --check toy" in raised.value.fix
    run_dir = _only_run(tmp_path)
    assert _finished_ids(run_dir) == [] and _summary(run_dir)["status"] == "aborted"
    (record,) = _aborted(run_dir)
    stderr = record["details"]["node"]["stderr"]
    assert b"Resource temporarily unavailable" in (run_dir / "blobs" / stderr[:2] / stderr[2:]).read_bytes()

    summary, out = run_inprocess(*args)
    assert summary["status"] == "finished" and summary["baseline"]["val"] == 5.0
    assert _finished_ids(run_dir) == ["0000", "0001"]


def test_executor_that_cannot_start_jobs_aborts_then_resumes(toy, tmp_path: Path, monkeypatch) -> None:
    from researchbench.benchmark.executors.modal import backend as modal_backend
    from tests.modal_standin import StandInModal, working_bwrap

    BWRAP = working_bwrap()
    if BWRAP is None:
        pytest.skip("the Modal stand-in needs a working bubblewrap")
    clients: list[StandInModal] = []

    def client() -> StandInModal:
        clients.append(StandInModal(tmp_path / f"standin{len(clients)}", BWRAP))
        if len(clients) == 1:
            clients[-1].fail_creates_at = {3}  # Modal becomes unreachable while the second experiment starts
        return clients[-1]

    monkeypatch.setattr(modal_backend, "modal_client", client)
    args = ("agent=optuna", "task=toy", f"results_dir={tmp_path / 'results'}", "budget.steps=3", "executor=modal",
            f"executor.remote_python={sys.executable}")
    with pytest.raises(InfrastructureFailure) as raised:
        run_inprocess(*args)
    assert raised.value.source == "executor"
    assert raised.value.cause.startswith("executor 'modal' could not run a job: modal: StandInError: Could not connect")
    assert "modal token info" in raised.value.fix
    run_dir = _only_run(tmp_path / "results")
    assert _finished_ids(run_dir) == ["0000", "0001"] and _summary(run_dir)["status"] == "aborted"

    summary, _ = run_inprocess(*args)  # Modal is reachable again
    assert summary["status"] == "finished"
    assert _finished_ids(run_dir) == ["0000", "0001", "0002", "0003"]
    nodes = [r["node"] for r in journal_records(run_dir) if r["kind"] == "finished"]
    assert not any("modal" in n["bug_reason"] for n in nodes), "an executor outage never becomes a buggy node"


def test_sweep_runs_its_other_jobs_and_exits_3_naming_the_aborted_one(toy, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    proc = run_cli("-m", "agent=optuna,greedy", *_stub_llm(url)[1:], "budget.steps=1", "quiet=true",
                   f"results_dir={tmp_path}")
    assert proc.returncode == 3, proc.stderr
    assert f"aborted: the LLM endpoint openai/test-model at {url}" in proc.stderr
    table = proc.stdout[proc.stdout.index("\nsweep: "):]
    optuna_row = next(line for line in table.splitlines() if line.startswith("optuna"))
    greedy_row = next(line for line in table.splitlines() if line.startswith("greedy"))
    assert "aborted" not in optuna_row and float(optuna_row.split()[4]) >= 0  # finished, with a hidden-test score
    assert "(aborted: the LLM endpoint" in greedy_row and greedy_row.split()[3:6] == ["-", "-", "-"]
