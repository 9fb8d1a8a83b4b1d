"""One experiment: a node's files run in a sandbox, then the task's evaluator scores what they wrote.

The code dir is rebuilt from the pristine baseline for every run with the node's editable files laid
over it; harness-owned files (the driver) are fresh copies, mounted read-only. The evaluator runs in
its own process outside the sandbox, reads only the predictions directory and the hidden labels, and
writes metrics where agent code cannot reach. Nothing is parsed from the agent's stdout.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmark.executors.base import Executor, Job, Limits
from benchmark.task import render
from benchmark.workspace import PreparedTask

EVALUATOR_TIMEOUT_S = 300.0


@dataclass
class Outcome:
    exit_code: int | None
    timed_out: bool
    seconds: float  # sandbox run + evaluator
    stdout: bytes
    stderr: bytes
    metrics: dict[str, float] = field(default_factory=dict)
    primary: float | None = None
    bug_reason: str = ""  # empty when the run produced a valid score

    @property
    def ok(self) -> bool:
        return not self.bug_reason


def materialize(prepared: PreparedTask, files: dict[str, str], code_dir: Path) -> list[Path]:
    """Write baseline + node files into code_dir; return the harness-owned paths (to mount read-only)."""
    if code_dir.exists():
        shutil.rmtree(code_dir)
    shutil.copytree(prepared.baseline_dir, code_dir)
    spec = prepared.spec
    owned = [code_dir / rel for rel in prepared.baseline_files() if not spec.is_editable(rel)]
    for rel, text in files.items():
        if not spec.is_editable(rel):
            raise ValueError(f"refusing to write non-editable file {rel}")
        target = code_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return owned


def run_phase(prepared: PreparedTask, files: dict[str, str], phase: str, executor: Executor,
              scratch: Path, timeout_s: float) -> Outcome:
    """Run the val or test phase of `files` and score it. Leaves logs in scratch; caller cleans up."""
    spec = prepared.spec
    code_dir, output_dir, eval_dir = scratch / "code", scratch / "output", scratch / "eval"
    for path in (output_dir, eval_dir):
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    owned = materialize(prepared, files, code_dir)
    readonly = [prepared.public_dir, *owned]
    if phase == "test":
        readonly.append(prepared.test_inputs_dir)
    values = dict(python=sys.executable, code=str(code_dir), data=str(prepared.public_dir),
                  output=str(output_dir), phase=phase, test_inputs=str(prepared.test_inputs_dir))
    argv = render(spec.phases[phase], **values)  # the manifest schema keeps {test_inputs} out of val
    job = Job(
        argv=tuple(argv), workdir=code_dir, stdout_path=scratch / "stdout.txt", stderr_path=scratch / "stderr.txt",
        timeout_s=timeout_s, readonly=tuple(readonly), writable=(output_dir,),
        limits=Limits(memory_gb=spec.resources.memory_gb, cpus=spec.resources.cpus), gpus=spec.resources.gpus,
    )
    started = time.monotonic()
    result = executor.submit(job).result()
    outcome = Outcome(exit_code=result.exit_code, timed_out=result.timed_out, seconds=0.0,
                      stdout=_read(job.stdout_path), stderr=_read(job.stderr_path))
    if result.error:
        outcome.bug_reason = f"could not run: {result.error}"
    elif result.timed_out:
        outcome.bug_reason = f"timed out after {timeout_s:g}s"
    elif result.exit_code != 0:
        outcome.bug_reason = f"exit code {result.exit_code}"
    else:
        _evaluate(prepared, phase, output_dir, eval_dir, outcome)
    outcome.seconds = round(time.monotonic() - started, 3)
    return outcome


def _evaluate(prepared: PreparedTask, phase: str, output_dir: Path, eval_dir: Path, outcome: Outcome) -> None:
    spec = prepared.spec
    metrics_path = eval_dir / "metrics.json"
    argv = render(spec.evaluator, python=sys.executable, task_dir=str(spec.task_dir), output=str(output_dir),
                  labels=str(prepared.labels_dir), metrics=str(metrics_path), phase=phase)
    try:
        proc = subprocess.run(argv, cwd=eval_dir, capture_output=True, timeout=EVALUATOR_TIMEOUT_S, text=True)
    except subprocess.TimeoutExpired:
        outcome.bug_reason = "evaluator timed out"
        return
    if proc.returncode != 0 or not metrics_path.exists():
        reason = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        outcome.bug_reason = f"invalid predictions: {reason[:300]}"
        return
    try:
        metrics = {k: float(v) for k, v in json.loads(metrics_path.read_text())["metrics"].items()}
    except (ValueError, KeyError, TypeError) as exc:
        outcome.bug_reason = f"evaluator wrote unreadable metrics: {exc}"
        return
    primary = metrics.get(spec.metric.name)
    if primary is None or not math.isfinite(primary):
        outcome.bug_reason = f"evaluator gave no finite '{spec.metric.name}'"
        return
    outcome.metrics, outcome.primary = metrics, primary


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""
