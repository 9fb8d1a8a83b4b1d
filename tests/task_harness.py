"""Helpers for the per-task tests (tests/test_task_<name>.py): prepare, run a driver, score, reproduce.

Drivers run as plain subprocesses from a copy of the pristine baseline (the way the sandbox runs
them, minus the sandbox); `reproduce_seed` goes through the real sandboxed phases
(`benchmark.run.experiment.run_phase`), exactly as `benchmarks/task_baseline.py` measured the record.
Evaluators are loaded in-process where a test only needs their validation or scoring functions,
which keeps the default suite's CPU time small.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from benchmark.executors.sandbox import THREAD_ENV
from benchmark.tasks import workspace as ws
from benchmark.tasks.manifest import TaskSpec, load_task

from conftest import HANG_TIMEOUT_S, SESSION_START_ENV

REPO = Path(__file__).resolve().parents[1]
# One thread for every math library, as the sandbox sets for a one-CPU job: BLAS results depend on the
# thread count, so a record measured in the sandbox reproduces here only on the same count, on any machine.
ONE_THREAD_ENV = {name: "1" for name in THREAD_ENV}


def task_dir(name: str) -> Path:
    return REPO / "ml_tasks" / name


def spec_of(name: str) -> TaskSpec:
    return load_task(task_dir(name))


def prepare_into(spec: TaskSpec, root: Path) -> ws.PreparedTask:
    return ws.prepare(spec, root=root, log=lambda _: None)


def code_copy(prepared: ws.PreparedTask, dest: Path, files: dict[str, str] | None = None,
              overlay: Path | None = None) -> Path:
    """A fresh code dir: the pristine baseline, then an overlay folder, then single files laid over it."""
    shutil.copytree(prepared.baseline_dir, dest)
    if overlay is not None:
        for path in overlay.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                (dest / path.relative_to(overlay)).write_text(path.read_text())
    for rel, text in (files or {}).items():
        (dest / rel).write_text(text)
    return dest


def with_params(prepared: ws.PreparedTask, **updates: object) -> str:
    """The baseline's params.json with some keys changed."""
    params = json.loads((prepared.baseline_dir / "params.json").read_text())
    return json.dumps({**params, **updates})


def run_driver(code: Path, phase: str, prepared: ws.PreparedTask, out: Path, seed: int = 0,
               timeout: float = HANG_TIMEOUT_S) -> subprocess.CompletedProcess:
    argv = [sys.executable, "driver.py", "--phase", phase, "--data", str(prepared.public_dir), "--out", str(out),
            "--seed", str(seed)]
    if phase == "test" and "{test_inputs}" in " ".join(prepared.spec.phases["test"]):
        argv += ["--test-inputs", str(prepared.test_inputs_dir)]
    return subprocess.run(argv, cwd=code, capture_output=True, text=True, timeout=timeout,
                          env={**SESSION_START_ENV, **ONE_THREAD_ENV})


def run_evaluator(spec: TaskSpec, phase: str, predictions: Path, labels: Path, metrics: Path,
                  timeout: float = HANG_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(spec.task_dir / "evaluate.py"), "--phase", phase,
                           "--predictions-dir", str(predictions), "--labels", str(labels), "--metrics", str(metrics)],
                          capture_output=True, text=True, timeout=timeout, env={**SESSION_START_ENV, **ONE_THREAD_ENV})


def load_evaluator(spec: TaskSpec) -> ModuleType:
    """The task's evaluate.py as a module (in-process), under a name unique to the task."""
    module_spec = importlib.util.spec_from_file_location(f"evaluate_{spec.name}", spec.task_dir / "evaluate.py")
    module = importlib.util.module_from_spec(module_spec)
    assert module_spec.loader is not None
    module_spec.loader.exec_module(module)
    return module


def reproduce_seed(prepared: ws.PreparedTask, tmp: Path, index: int = 0) -> tuple[float, float]:
    """Re-run the recorded baseline's val and test phases for its `index`-th seed in the sandbox."""
    from benchmark.executors.local import LocalExecutor, LocalExecutorConfig
    from benchmark.run.experiment import run_phase

    spec = prepared.spec
    assert spec.baseline is not None
    seed = spec.baseline.seeds[index]
    files = {rel: data.decode() for rel, data in prepared.baseline_files().items() if spec.is_editable(rel)}
    scores = []
    with LocalExecutor(LocalExecutorConfig(sandbox="auto")) as executor:
        for phase, timeout in (("val", spec.budget.step_timeout_s), ("test", spec.budget.final_test_timeout_s())):
            outcome = run_phase(prepared, files, phase, executor, tmp / phase, timeout, seed)
            assert outcome.ok, outcome.bug_reason
            scores.append(outcome.primary)
    return scores[0], scores[1]
