"""The one helper module of the task tests (tests/ml_tasks/test_tasks.py and tests/ml_tasks/test_<name>.py).

Everything that runs a built-in task's code goes through here: prepare a task once per session, run a
phase through the real sandbox and evaluator (keeping the predictions the evaluator was handed), call the
evaluator's CLI on hand-made predictions, and run a driver as a plain subprocess for task-specific checks.
It is also the one place the task tests import benchmark internals from.

Task code always runs from the session's initial environment with one thread per math library: some task
code that tests import in-process pins its numerics by setting variables, and BLAS results depend on the
thread count, so a driver that inherited either would compute different bits than its record.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from researchbench.benchmark.authoring.task_check import (PASS, RECORD_ABS_TOL, RECORD_REL_TOL, check_task,
                                                          overlay_files, probe_val_phase)
from researchbench.benchmark.executors.local import LocalExecutor, LocalExecutorConfig
from researchbench.benchmark.executors.local.sandbox import THREAD_ENV
from researchbench.benchmark.run.experiment import Outcome, run_phase
from researchbench.benchmark.tasks import workspace as ws
from researchbench.benchmark.tasks.manifest import TaskSpec, load_task, render

from conftest import HANG_TIMEOUT_S, SESSION_START_ENV

REPO = Path(__file__).resolve().parents[1]

def _is_variant(manifest: Path) -> bool:
    return "extends" in (yaml.safe_load(manifest.read_text()) or {})


# The tasks with code of their own. A variant (`extends:`, the GPU suite) runs its base's code, which these
# tests cover; tests/ml_tasks/test_gpu_suite.py tests the variants.
TASK_NAMES = sorted(p.parent.name for p in (REPO / "ml_tasks").glob("*/task.yaml") if not _is_variant(p))
VARIANT_NAMES = sorted(p.parent.name for p in (REPO / "ml_tasks").glob("*/task.yaml") if _is_variant(p))
# One thread for every math library, as the sandbox sets for a one-CPU job: a record measured in the
# sandbox reproduces outside it only on the same count, on any machine.
ONE_THREAD_ENV = {name: "1" for name in THREAD_ENV}
TASK_ENV = {**SESSION_START_ENV, **ONE_THREAD_ENV, "CUDA_VISIBLE_DEVICES": ""}



def task_dir(name: str) -> Path:
    return REPO / "ml_tasks" / name


def spec_of(name: str) -> TaskSpec:
    return load_task(task_dir(name))


@functools.cache
def prepared_task(name: str) -> ws.PreparedTask:
    """The task prepared once per session, in the session's workspace (tests/conftest.py)."""
    return ws.prepare(spec_of(name), log=lambda *_: None)


def prepare_into(name: str, root: Path) -> ws.PreparedTask:
    """A private prepare, for tests that change or compare the prepared files."""
    return ws.prepare(spec_of(name), root=root, log=lambda *_: None)


@functools.cache
def evaluator(name: str) -> ModuleType:
    """The task's evaluate.py, loaded once per session, for in-process calls of its `main`."""
    return task_module(name)


def task_module(name: str, file: str = "evaluate") -> ModuleType:
    """A task's own script (evaluate.py, prepare.py) as a module under a name unique to the task: every task
    has an `evaluate.py`, so a plain import would return whichever task's was imported first."""
    module_spec = importlib.util.spec_from_file_location(f"{name}_{file}", task_dir(name) / f"{file}.py")
    module = importlib.util.module_from_spec(module_spec)
    assert module_spec.loader is not None
    module_spec.loader.exec_module(module)
    return module


# -- fixtures of the per-task files (tests/ml_tasks/test_<name>.py), which name their task in a module-level TASK and
# import these: one definition instead of a copy per file

@pytest.fixture(scope="module")
def prepared(request) -> ws.PreparedTask:
    return prepared_task(request.module.TASK)


@pytest.fixture(scope="module")
def spec(prepared: ws.PreparedTask) -> TaskSpec:
    return prepared.spec


@pytest.fixture(scope="module")
def ev(request) -> ModuleType:
    """The task's evaluate.py as a module, for in-process checks of its functions."""
    return evaluator(request.module.TASK)


# -- running a phase the way an experiment does --------------------------------------------------------------

@dataclass
class PhaseRun:
    outcome: Outcome
    sandboxed: bool  # whether bubblewrap hid the host (without it only file permissions hide the labels)
    predictions: Path | None  # a copy of what the evaluator was handed (None when the job produced nothing)


class _KeepHanded:
    """A real executor that copies the collected predictions before the evaluator's job runs: run_phase
    removes its scratch folder, and the hostility tests start from real predictions."""

    def __init__(self, inner: LocalExecutor, handed: Path, keep: Path):
        self.inner, self.handed, self.keep = inner, handed, keep

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def submit(self, job):
        if self.handed.is_dir() and any(self.handed.iterdir()) and not self.keep.exists():
            shutil.copytree(self.handed, self.keep)
        return self.inner.submit(job)


def run_sandboxed(prepared: ws.PreparedTask, files: dict[str, str], phase: str, scratch: Path,
                  seed: int = 0) -> PhaseRun:
    """One phase exactly as an experiment runs it: local sandbox, declared outputs, the evaluator."""
    spec = prepared.spec
    timeout = spec.budget.step_timeout_s if phase == "val" else spec.budget.final_test_timeout_s()
    work = scratch / "results" / "scratch" / "0001"
    keep = scratch / "predictions"
    with LocalExecutor(LocalExecutorConfig(sandbox="auto")) as executor:
        outcome = run_phase(prepared, files, phase, _KeepHanded(executor, work / "handed", keep), work, timeout,
                            seed=seed)
        return PhaseRun(outcome, executor.sandbox_mode == "bwrap", keep if keep.exists() else None)


def _session_scratch(label: str) -> Path:
    root = Path(os.environ["RESEARCHBENCH_WORKSPACE"]) / ".task-kit"
    root.mkdir(exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{label}-", dir=root))


def leak_probe(name: str, scratch: Path) -> dict | None:
    """`--check`'s label probe in the val sandbox: its report, or None where bubblewrap is unusable (without
    it the host filesystem is visible and only file permissions hide the labels)."""
    prepared = prepared_task(name)
    with LocalExecutor(LocalExecutorConfig(sandbox="auto")) as executor:
        if executor.sandbox_mode != "bwrap":
            return None
        return probe_val_phase(prepared, executor, scratch, prepared.spec.baseline.seeds[0])


def prepared_checksums(name: str, root: Path) -> dict[str, str]:
    """A fresh prepare under `root`: the checksums of every file it wrote (its checksum manifest)."""
    prepared = ws.prepare(spec_of(name), root=root, log=lambda *_: None)
    return json.loads((prepared.root / ws.CHECKSUM_FILE).read_text())["files"]


def full_check(name: str, root: Path, **options):
    """`setup.py --check`'s report for the task (the CLI's 60 s val limit is left out: a shared machine's clock
    is not the task's)."""
    return check_task(task_dir(name), root=root, val_seconds_limit=None, **options)


def baseline_run(name: str, phase: str = "val") -> PhaseRun:
    """The pristine baseline's `phase` on the record's first seed, run once per session and shared."""
    return _baseline_run(name, phase)  # one cache key however the phase was passed


@functools.cache
def _baseline_run(name: str, phase: str) -> PhaseRun:
    prepared = prepared_task(name)
    assert prepared.spec.baseline is not None
    return run_sandboxed(prepared, {}, phase, _session_scratch(f"{name}-{phase}"), prepared.spec.baseline.seeds[0])


def overlay_run(name: str, folder: str, phase: str) -> PhaseRun:
    """A checks.trivial (or other) overlay's `phase` on the record's first seed, run once per session."""
    return _overlay_run(name, folder, phase)


@functools.cache
def _overlay_run(name: str, folder: str, phase: str) -> PhaseRun:
    prepared = prepared_task(name)
    assert prepared.spec.baseline is not None
    label = f"{name}-{Path(folder).name}-{phase}"
    return run_sandboxed(prepared, overlay(prepared.spec, folder), phase, _session_scratch(label),
                         prepared.spec.baseline.seeds[0])


def overlay(spec: TaskSpec, folder: str) -> dict[str, str]:
    """The editable files of a checks.trivial or checks.reference folder, as an experiment's files."""
    return overlay_files(spec, folder)


# -- the evaluator, as the harness calls it ------------------------------------------------------------------

def evaluate(spec: TaskSpec, phase: str, predictions_dir: Path, labels: Path, metrics: Path
             ) -> subprocess.CompletedProcess:
    """The task's evaluator CLI (argv from the manifest) outside the sandbox."""
    argv = render(spec.evaluator, python=sys.executable, task_dir=str(spec.task_dir), output=str(predictions_dir),
                  labels=str(labels), metrics=str(metrics), phase=phase)
    return subprocess.run(argv, capture_output=True, text=True, timeout=HANG_TIMEOUT_S, env=TASK_ENV)


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


def rejects_inprocess(module: ModuleType, phase: str, predictions_dir: Path, labels: Path, tmp: Path,
                      capsys) -> str:
    """Like evaluator_rejects, through the evaluator's `main` in-process (no interpreter start per case)."""
    metrics = tmp / "metrics.json"
    metrics.write_text('{"metrics": {"stale": 0.0}}')
    capsys.readouterr()
    try:
        code = module.main(["--phase", phase, "--predictions-dir", str(predictions_dir), "--labels", str(labels),
                            "--metrics", str(metrics)])
    except SystemExit as exc:  # an evaluator may exit from argument parsing or its error path
        code = exc.code
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert not metrics.exists()
    return err.strip()


def value_column_breakages(value: str, key: str) -> list:
    """`(breakage, reason)` pytest params for an evaluator that reads a frame of integer `key`s and finite
    numeric `value`s: each breakage turns valid predictions into invalid ones, and `reason` is in its error."""
    def first(f, x):  # the first row's value replaced by x
        return f.assign(**{value: [x] + list(f[value].iloc[1:])})

    return [pytest.param(lambda f: first(f, float("inf")), "NaN or infinite", id="inf"),
            pytest.param(lambda f: f.drop(columns=value), "lacks columns", id=f"no-{value}"),
            pytest.param(lambda f: first(f, "abc"), "not numbers", id="text"),
            pytest.param(lambda f: f.assign(**{key: f[key] + 0.5}), "must hold integers", id=f"float-{key}")]


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


def assert_search_found_nothing(run: PhaseRun) -> None:
    """A val run whose model.py ran `searcher`: the job succeeded, the search finished, and (under bwrap;
    the test skips without it) it found nothing."""
    assert run.outcome.ok, run.outcome.bug_reason
    stdout = run.outcome.stdout.decode()
    assert "SEARCH DONE" in stdout
    if not run.sandboxed:
        pytest.skip("without bwrap the host filesystem is visible; the sandbox is what hides the labels")
    assert "FOUND" not in stdout, stdout



# Lines of a hostile learner's function body (indented four spaces; `attempt(name, action)` must raise unless
# `action` fails with an OSError, and `np`, `os` imported): stashing data for a later split or round, and
# reaching the harness through its stdout or a signal to the parent.
STASH_AND_SIGNAL_ATTEMPTS = """\
    attempt("stash in /tmp", lambda: open("/tmp/stash.bin", "wb"))
    attempt("stash in cwd", lambda: np.save("stash.npy", np.zeros(3)))
    attempt("stash as a folder name", lambda: os.mkdir("/tmp/label-1"))
    attempt("reopen stdout", lambda: open("/proc/self/fd/1", "rb"))
    attempt("dev stdout", lambda: open("/dev/stdout", "rb"))
    attempt("signal the parent", lambda: os.kill(os.getppid(), 0))
"""

# -- running a driver outside the sandbox (task-specific checks) ---------------------------------------------

def code_copy(prepared: ws.PreparedTask, dest: Path, files: dict[str, str] | None = None,
              overlay_dir: Path | None = None) -> Path:
    """A fresh code dir: the pristine baseline, then an overlay folder, then single files laid over it."""
    shutil.copytree(prepared.baseline_dir, dest)
    if overlay_dir is not None:
        for path in overlay_dir.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                (dest / path.relative_to(overlay_dir)).write_text(path.read_text())
    for rel, text in (files or {}).items():
        (dest / rel).write_text(text)
    return dest


def with_params(prepared: ws.PreparedTask, **updates: object) -> str:
    """The baseline's params.json with some keys changed."""
    params = json.loads((prepared.baseline_dir / "params.json").read_text())
    return json.dumps({**params, **updates})


def phase_args(prepared: ws.PreparedTask, phase: str, out: Path, seed: int = 0) -> list[str]:
    """The driver's arguments for `phase` (test inputs and the seed only where the manifest passes them)."""
    template = " ".join(prepared.spec.phases[phase])
    args = ["--phase", phase, "--data", str(prepared.public_dir), "--out", str(out)]
    if "{test_inputs}" in template:
        args += ["--test-inputs", str(prepared.test_inputs_dir)]
    return args + (["--seed", str(seed)] if "{seed}" in template else [])


def run_driver(code: Path, *args: str, script: str = "driver.py", env: dict[str, str] | None = None,
               timeout: float = HANG_TIMEOUT_S) -> subprocess.CompletedProcess:
    """`script` (the driver, or a wrapper that runs it) in `code`, with TASK_ENV plus `env`."""
    return subprocess.run([sys.executable, script, *args], cwd=code, capture_output=True, text=True,
                          timeout=timeout, env={**TASK_ENV, **(env or {})})



def driver_rejects(prepared: ws.PreparedTask, tmp: Path, files: dict[str, str], reason: str,
                   output: str | None = None) -> str:
    """The baseline with `files` laid over it (in tmp/code), its val driver run outside the sandbox: it must
    exit 1 with `reason` on stderr, and write no `output` (a file name under tmp/out) where one is named."""
    code = code_copy(prepared, tmp / "code", files)
    result = run_driver(code, *phase_args(prepared, "val", tmp / "out"))
    assert result.returncode == 1 and reason in result.stderr, result.stderr
    if output is not None:
        assert not (tmp / "out" / output).exists()
    return result.stderr

# -- prepared files ------------------------------------------------------------------------------------------

def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.name.startswith(".")}


def data_digest(root: Path) -> dict[str, dict[str, str]]:
    """Digest of the data folders (public, test inputs, labels) under a task root, for a prepare run again."""
    return {part: tree_digest(root / part) for part in ("public", "test_inputs", "labels")}


def prepared_digest(prepared: ws.PreparedTask) -> dict[str, str]:
    """Digest of the data a prepare wrote (public, test inputs, labels), keyed by path under the task root."""
    digest = {}
    for folder in (prepared.public_dir, prepared.test_inputs_dir, prepared.labels_dir):
        rel = folder.relative_to(prepared.root)
        digest.update({f"{rel}/{k}": v for k, v in tree_digest(folder).items()})
    return digest


def prepare_again(prepared: ws.PreparedTask, dest: Path) -> dict[str, str]:
    """Run the task's prepare command into `dest`; the digest of what it wrote."""
    spec = prepared.spec
    argv = render(spec.prepare, python=sys.executable, task_dir=str(spec.task_dir), workspace=str(dest))
    subprocess.run(argv, check=True, capture_output=True, timeout=HANG_TIMEOUT_S, env=TASK_ENV)
    return tree_digest(dest)
