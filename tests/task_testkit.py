"""Helpers shared by the per-task tests (tests/test_task_<name>.py): prepare a built-in task once, run
its phases through the real sandbox and evaluator, call its evaluator on hand-made predictions, and
a hostile editable file that searches the sandbox for hidden data.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmark.run.experiment import Outcome, run_phase
from benchmark.tasks import workspace as ws
from benchmark.tasks.manifest import TaskSpec, load_task

from conftest import HANG_TIMEOUT_S

REPO = Path(__file__).resolve().parents[1]


def task_dir(name: str) -> Path:
    return REPO / "ml_tasks" / name


def task_module(name: str, file: str):
    """A task's own script (prepare.py, evaluate.py) as a module under a unique name: every task has a
    `prepare.py`, so a plain `import prepare` would return whichever task's was imported first."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{name}_{file}", task_dir(name) / f"{file}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare_task(name: str, root: Path) -> ws.PreparedTask:
    return ws.prepare(load_task(task_dir(name)), root=root, log=lambda *a: None)


def run_sandboxed(prepared: ws.PreparedTask, files: dict[str, str], phase: str, scratch: Path,
                  seed: int = 0) -> tuple[Outcome, bool]:
    """One phase exactly as an experiment runs it; also whether the bwrap sandbox was in use."""
    from benchmark.executors import LocalExecutor, LocalExecutorConfig

    spec = prepared.spec
    timeout = spec.budget.step_timeout_s if phase == "val" else spec.budget.final_test_timeout_s()
    with LocalExecutor(LocalExecutorConfig(sandbox="auto")) as executor:
        outcome = run_phase(prepared, files, phase, executor, scratch / "results" / "scratch" / "0001",
                            timeout, seed=seed)
        return outcome, executor.sandbox_mode == "bwrap"


def overlay(spec: TaskSpec, folder: str) -> dict[str, str]:
    """The editable files of a checks.trivial folder, as an experiment's files."""
    root = spec.task_dir / folder
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}


def evaluate(spec: TaskSpec, phase: str, predictions_dir: Path, labels: Path, metrics: Path
             ) -> subprocess.CompletedProcess:
    """The task's evaluator as the harness calls it (argv from the manifest)."""
    from benchmark.tasks.manifest import render

    argv = render(spec.evaluator, python=sys.executable, task_dir=str(spec.task_dir), output=str(predictions_dir),
                  labels=str(labels), metrics=str(metrics), phase=phase)
    return subprocess.run(argv, capture_output=True, text=True, timeout=HANG_TIMEOUT_S)


def evaluate_ok(spec: TaskSpec, phase: str, predictions_dir: Path, labels: Path, tmp: Path) -> dict[str, float]:
    metrics = tmp / f"metrics-{phase}.json"
    result = evaluate(spec, phase, predictions_dir, labels, metrics)
    assert result.returncode == 0, result.stderr
    payload = json.loads(metrics.read_text())
    assert set(payload) == {"metrics"}
    return payload["metrics"]


def evaluator_rejects(spec: TaskSpec, phase: str, predictions_dir: Path, labels: Path, tmp: Path) -> str:
    """Run the evaluator on invalid predictions: it must exit non-zero with one line and no metrics."""
    metrics = tmp / "metrics.json"
    metrics.write_text('{"metrics": {"stale": 0.0}}')  # a stale file must not survive a failed evaluation
    result = evaluate(spec, phase, predictions_dir, labels, metrics)
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not metrics.exists()
    return result.stderr.strip()


def evaluator_module(spec: TaskSpec):
    """The task's evaluate.py as a module, to run its `main` in-process (the same code, no interpreter start)."""
    import importlib.util

    spec_ = importlib.util.spec_from_file_location(f"evaluate_{spec.name}", spec.task_dir / "evaluate.py")
    module = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(module)
    return module


def rejects_inprocess(module, phase: str, predictions_dir: Path, labels: Path, tmp: Path, capsys) -> str:
    """Like evaluator_rejects, in-process: exit code 1, one line on stderr, no metrics file."""
    metrics = tmp / "metrics.json"
    metrics.write_text('{"metrics": {"stale": 0.0}}')
    capsys.readouterr()
    code = module.main(["--phase", phase, "--predictions-dir", str(predictions_dir), "--labels", str(labels),
                        "--metrics", str(metrics)])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert not metrics.exists()
    return err.strip()


def searcher(needles: list[str], names: list[str]) -> str:
    """Python source that walks the whole visible filesystem looking for hidden data, and prints what
    it finds as `FOUND <path>` lines (stdout comes back to the harness). It looks for files named in
    `names` anywhere and for `needles` (strings only hidden files hold) inside small text files; the
    needles are stored reversed, so the searcher's own file does not match."""
    return f'''
import os as _os
def _search():
    needles = [n[::-1] for n in {[n[::-1] for n in needles]!r}]  # reversed, so this file holds none
    names = set({names!r})
    found = []
    for root, dirs, files in _os.walk("/", onerror=lambda e: None):
        if root in ("/proc", "/sys", "/dev") or root.startswith(("/proc/", "/sys/", "/dev/")):
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if d not in ("site-packages", "dist-packages", "__pycache__", ".git")]
        system = root.startswith(("/usr/", "/lib", "/bin", "/sbin", "/etc/", "/var/lib/", "/opt/"))
        for name in files:
            path = _os.path.join(root, name)
            if name in names:
                found.append(path)
                continue
            if system or not name.endswith((".py", ".csv", ".json", ".yaml", ".md", ".txt", ".npz", ".npy")):
                continue  # contents: only data- and code-like files outside system folders
            try:
                if _os.path.islink(path) or _os.path.getsize(path) > 2_000_000:
                    continue
                with open(path, "rb") as fh:
                    text = fh.read().decode("utf-8", "ignore")
            except OSError:
                continue
            if any(n in text for n in needles):
                found.append(path)
    for path in found:
        print("FOUND", path, flush=True)
    print("SEARCH DONE", flush=True)
_search()
'''
