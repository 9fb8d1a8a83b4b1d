"""Shared test setup: no network, a private workspace and results dir, the toy task on the task path."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["RESEARCHBENCH_TASKS_PATH"] = str(FIXTURES / "tasks")
# Drivers and evaluators that tests run as plain subprocesses import this checkout's task_runtime, as a
# sandboxed job does from the harness's copy (benchmark/executors/local/sandbox.py, RUNTIME_LIB).
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
# Tests assert behaviour, not speed: a wall-clock limit in a test only catches a hang, so it sits far above
# (at least 10x) the idle time of what it limits; on a loaded machine everything takes several times longer.
# pytest-timeout's per-test limit (pyproject.toml) is above this, so a hung subprocess fails with its command.
HANG_TIMEOUT_S = 1200.0
# The environment as the test session began. Task drivers run from it, not from os.environ: some task code
# that tests import in-process pins its numerics by setting variables (e.g. representation_learning's
# evaluator sets OPENBLAS_CORETYPE), and a later driver inheriting them computes different bits than its
# record, which was measured in the sandbox's clean environment.
SESSION_START_ENV = dict(os.environ)

# The causality baseline's S-learner fit, and the T-learner fit that scripted agents put in its place: a
# code edit that really lowers PEHE on this data (examples/scripts/causality.yaml and tests/fixtures/scripts/causality_*.yaml make the same edit).
CAUSALITY_S_LEARNER = """\
    model = make_lgbm(params).fit(np.column_stack([x_train, t_train]), y_train)
    treated = model.predict(np.column_stack([x_eval, np.ones(len(x_eval))]))
    control = model.predict(np.column_stack([x_eval, np.zeros(len(x_eval))]))"""
CAUSALITY_T_LEARNER = """\
    treated = make_lgbm(params).fit(x_train[t_train == 1], y_train[t_train == 1]).predict(x_eval)
    control = make_lgbm(params).fit(x_train[t_train == 0], y_train[t_train == 0]).predict(x_eval)"""


@pytest.fixture(scope="session", autouse=True)
def workspace_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All tests and the CLIs they start prepare tasks here, never in the repo's workspace/."""
    root = tmp_path_factory.mktemp("workspace")
    os.environ["RESEARCHBENCH_WORKSPACE"] = str(root)
    return root


def _prepared(name: str):
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.workspace import prepare

    return prepare(load_task(get_registry().tasks[name]), log=lambda *a: None)


@pytest.fixture(scope="session")
def toy(workspace_root: Path):
    return _prepared("toy")


@pytest.fixture(scope="session")
def causality(workspace_root: Path):
    return _prepared("causality")


def run_cli(*args: str, cwd: Path = REPO, timeout: float = HANG_TIMEOUT_S, env: dict | None = None,
            script: str = "run_agent_benchmark.py") -> subprocess.CompletedProcess:
    """Run one of the repo's CLIs the way a user would."""
    return subprocess.run([sys.executable, str(REPO / script), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def complete_journal_records(run_dir: Path) -> list[dict]:
    """The journal's records up to its last newline: a run killed mid-write leaves a torn last line."""
    text = (Path(run_dir) / "journal.jsonl").read_text()
    return [json.loads(line) for line in text[:text.rfind("\n") + 1].splitlines()]


def finished_at_least(n: int) -> Callable[[list[dict]], bool]:
    return lambda records: sum(r["kind"] == "finished" for r in records) >= n


def kill_run_when(results: Path, args: list[str], condition: Callable[[list[dict]], bool]) -> None:
    """Start the CLI run into ``results`` and SIGKILL its whole process group as soon as its journal meets
    ``condition``: a real crash at a chosen point, which the test then resumes. Fails if the run ends first."""
    proc = subprocess.Popen([sys.executable, str(REPO / "run_agent_benchmark.py"), *args, f"results_dir={results}"],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + HANG_TIMEOUT_S
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            journal = next(results.glob("*/*/*/journal.jsonl"), None)
            if journal is not None and condition(complete_journal_records(journal.parent)):
                os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.005)
        else:
            pytest.fail("the run ended before the kill point was reached" if proc.poll() is not None
                        else f"the kill point was not reached within {HANG_TIMEOUT_S:.0f} s")
    finally:
        proc.wait(timeout=30)


def killed_and_resumed(tmp_path: Path, args: list[str], agent: str, task: str = "toy",
                       kill_at: int = 3) -> tuple[Path, Path]:
    """An uninterrupted run of `args` in process, then the same run SIGKILLed through the CLI once `kill_at`
    nodes finished and resumed in process (a CLI start per run costs seconds of CPU): (reference run dir,
    resumed run dir). Fails unless the second run says it resumed."""
    reference, _ = run_inprocess(*args, f"results_dir={tmp_path / 'reference'}")
    killed = tmp_path / "killed"
    kill_run_when(killed, args, finished_at_least(kill_at))
    _, output = run_inprocess(*args, f"results_dir={killed}")
    assert "resuming" in output
    (run_dir,) = (killed / agent / task).iterdir()
    return Path(reference["run_dir"]), run_dir


def compose(*overrides: str):
    """The config the CLI would build for these overrides (Hydra's compose API, no subprocess)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from researchbench.benchmark.cli import CONFIG_DIR
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.run.config import register_configs

    register_configs(get_registry())
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            return hydra_compose(config_name="config", overrides=list(overrides))
    finally:
        GlobalHydra.instance().clear()


def run_inprocess(*overrides: str, **updates):
    """Compose, apply non-CLI-friendly values (e.g. scripted LLM replies), run; returns (summary, output)."""
    from omegaconf import OmegaConf

    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.run.engine import run_benchmark

    cfg = compose(*overrides)
    for key, value in updates.items():
        OmegaConf.update(cfg, key.replace("__", "."), value, merge=False)
    lines: list[str] = []
    summary = run_benchmark(cfg, get_registry(), echo=lines.append)
    return summary, "\n".join(lines)


def journal_records(run_dir: Path) -> list[dict]:
    import json

    return [json.loads(line) for line in (Path(run_dir) / "journal.jsonl").read_text().splitlines()]


class MetricsAddedAfterEvaluation:
    """A real executor, except that once an evaluator has written its metrics.json the metrics gain `extra`:
    what a task's evaluator could write after a division by zero or when echoing hostile predictions."""

    def __init__(self, inner, extra: dict):
        self.inner, self.extra = inner, extra

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def submit(self, job):
        import json
        from concurrent.futures import Future

        result = self.inner.submit(job).result()
        metrics = job.workdir / "metrics.json"
        if metrics.exists():
            raw = json.loads(metrics.read_text())
            raw["metrics"].update(self.extra)
            metrics.write_text(json.dumps(raw))  # Python writes NaN and Infinity; the harness reads them back
        done: Future = Future()
        done.set_result(result)
        return done


def one_line_error(proc, *fragments: str) -> str:
    """A CLI's refusal: exit 2, no traceback, one line on stderr starting `error: ` and holding each fragment."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]
