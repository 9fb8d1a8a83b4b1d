"""`hydra/launcher=modal` at the client boundary: what each whole run's sandbox is created with and what
its harness process is given. Agent code never runs beside the run's LLM keys, Modal token and labels
unless allowed knowingly, and no sandbox of a remote run falls back to none on its own."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from researchbench.benchmark.launch.modal_runs import RemoteRun, RemoteRunSettings, run_remotely
from conftest import run_cli


class _Proc:
    stdout: list[bytes] = []
    stderr: list[bytes] = []

    def wait(self) -> int:
        return 0


class _RecordedSandbox:
    def __init__(self, kwargs: dict[str, Any]) -> None:
        self.kwargs, self.execs, self.terminated = kwargs, [], False
        self.filesystem = self

    def write_bytes(self, data: bytes, path: str) -> None:
        pass

    def exec(self, *argv: str, **kwargs: Any) -> _Proc:
        self.execs.append((argv, kwargs.get("env")))
        return _Proc()

    def terminate(self) -> None:
        self.terminated = True


class RecordingModal:
    """Records Sandbox.create and every exec; each command 'succeeds' at once with no output."""

    def __init__(self) -> None:
        self.sandboxes: list[_RecordedSandbox] = []
        self.Sandbox = self

    def create(self, **kwargs: Any) -> _RecordedSandbox:
        self.sandboxes.append(_RecordedSandbox(kwargs))
        return self.sandboxes[-1]


@pytest.mark.parametrize("executor, extra, allowed, pinned", [
    ("modal", [], False, "executor.local_sandbox=bwrap"),  # the default: experiments in sandboxes of their own
    ("local", [], True, "executor.sandbox=bwrap"),  # allowed knowingly: still never unsandboxed by itself
    ("local", ["executor.sandbox=none"], True, "executor.sandbox=none"),  # the user said so
])
def test_what_a_whole_run_is_given(toy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executor: str,
                                   extra: list[str], allowed: bool, pinned: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-for-the-harness")
    monkeypatch.setenv("MODAL_TOKEN_ID", "ak-harness")
    monkeypatch.setenv("MODAL_TOKEN_SECRET", "as-harness")
    client = RecordingModal()
    run_dir = tmp_path / "results" / "optuna" / "toy" / "seed0-abcdef12"
    run = RemoteRun(overrides=["agent=optuna", "task=toy", f"executor={executor}", *extra], executor=executor,
                    run_dir=run_dir, workspace=toy.root, task=toy.spec, log_path=tmp_path / "run.log")
    assert run_remotely(client, object(), object(), run, RemoteRunSettings(agent_code_in_run=allowed), "tag") == 0
    (box,) = client.sandboxes
    assert box.terminated
    assert not box.kwargs.get("secrets") and not box.kwargs.get("env"), "secrets given to every process of the sandbox"
    (argv, env), = [(a, e) for a, e in box.execs if "run_agent_benchmark.py" in " ".join(a)]
    assert f"executor={executor}" in argv and pinned in argv
    assert f"results_dir={run_dir.parents[2]}" in argv and f"run_id={run_dir.name}" in argv
    assert not any(o.endswith("=bwrap") for o in argv if o != pinned)
    assert env["OPENAI_API_KEY"] == "sk-secret-for-the-harness"  # the agent loop's LLM calls
    # the Modal token only where the run makes its experiments' sandboxes
    assert ("MODAL_TOKEN_SECRET" in env) is (executor == "modal")
    assert all(e is None for a, e in box.execs if "run_agent_benchmark.py" not in " ".join(a))


def test_agent_code_beside_the_runs_secrets_is_refused(toy, tmp_path: Path) -> None:
    """executor=local (the default) would run agent code in the run's sandbox, beside its keys and
    labels: refused with one line before any sandbox is made."""
    proc = run_cli("-m", "hydra/launcher=modal", "hydra.launcher.client=tests.modal_standin:from_env",
                   f"hydra.launcher.remote_python={sys.executable}", "agent=optuna", "task=toy", "seed=0,1",
                   f"results_dir={tmp_path / 'results'}", env={"RESEARCHBENCH_STANDIN_ROOT": str(tmp_path / "standin")})
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "executor=local would run agent code in the run's own sandbox" in line
    assert "add executor=modal" in line and "hydra.launcher.agent_code_in_run=true" in line
    assert not (tmp_path / "standin").exists() and not (tmp_path / "results").exists()
