"""Helpers shared by the per-task tests (continual_learning, federated_learning, representation_learning,
unlearning): prepare once per session, run a driver from a copy of the pristine baseline with some
editable files replaced, load an evaluator module, and re-run a phase in the sandbox for the
baseline-record checks."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from conftest import HANG_TIMEOUT_S, SESSION_START_ENV
from tests.task_harness import ONE_THREAD_ENV

REPO = Path(__file__).resolve().parents[1]


def prepared_task(name: str):
    from benchmark.plugins.manager import get_registry
    from benchmark.tasks.manifest import load_task
    from benchmark.tasks.workspace import prepare

    return prepare(load_task(get_registry().tasks[name]), log=lambda *_: None)


def code_copy(prepared, dest: Path, files: dict[str, str] | None = None) -> Path:
    """A fresh code dir: the pristine baseline with some editable files replaced."""
    shutil.copytree(prepared.baseline_dir, dest)
    for rel, text in (files or {}).items():
        (dest / rel).write_text(text)
    return dest


def run_driver(code: Path, *args: str, timeout: float = HANG_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "driver.py", *args], cwd=code, capture_output=True, text=True,
                          timeout=timeout, env={**SESSION_START_ENV, **ONE_THREAD_ENV, "CUDA_VISIBLE_DEVICES": ""})


def evaluator_module(task: str) -> ModuleType:
    """The task's evaluate.py as a module, for in-process checks of its scoring functions."""
    path = REPO / "ml_tasks" / task / "evaluate.py"
    spec = importlib.util.spec_from_file_location(f"evaluate_{task}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_evaluator(task: str, phase: str, predictions_dir: Path, labels_dir: Path,
                  metrics: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "ml_tasks" / task / "evaluate.py"), "--phase", phase,
                           "--predictions-dir", str(predictions_dir), "--labels", str(labels_dir),
                           "--metrics", str(metrics)], capture_output=True, text=True, timeout=HANG_TIMEOUT_S)


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.name.startswith(".")}


def prepare_again(prepared, dest: Path) -> dict[str, str]:
    """Run the task's prepare command into `dest`; the digest of what it wrote."""
    from benchmark.tasks.manifest import render

    spec = prepared.spec
    argv = render(spec.prepare, python=sys.executable, task_dir=str(spec.task_dir), workspace=str(dest))
    subprocess.run(argv, check=True, capture_output=True, timeout=HANG_TIMEOUT_S)
    return tree_digest(dest)


def prepared_digest(prepared) -> dict[str, str]:
    digest = {}
    for folder in (prepared.public_dir, prepared.test_inputs_dir, prepared.labels_dir):
        rel = folder.relative_to(prepared.root)
        digest.update({f"{rel}/{k}": v for k, v in tree_digest(folder).items()})
    return digest


def sandboxed_phase(prepared, phase: str, seed: int, scratch: Path, files: dict[str, str] | None = None):
    """One phase through the real harness path: local sandbox, declared outputs, the evaluator."""
    from benchmark.executors.local import LocalExecutor, LocalExecutorConfig
    from benchmark.run.experiment import run_phase

    spec = prepared.spec
    timeout = spec.budget.step_timeout_s if phase == "val" else spec.budget.final_test_timeout_s()
    with LocalExecutor(LocalExecutorConfig()) as executor:
        return run_phase(prepared, files or {}, phase, executor, scratch / "scratch", timeout, seed=seed)
