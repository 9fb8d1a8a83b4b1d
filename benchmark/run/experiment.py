"""One experiment: a node's files run in a sandbox, then the task's evaluator scores what they wrote.

The code dir is rebuilt from the pristine baseline for every run with the node's editable files laid
over it; harness-owned files (the driver) are fresh copies, mounted read-only. When the job has
ended, the harness itself copies the task's declared `outputs` out of the job's output dir (regular
files only, no links anywhere in the path, size-capped) into a dir the job never saw. The evaluator
then runs in a sandbox of its own on those copies, with the labels read-only and limits from the
manifest, and writes metrics where agent code cannot reach. Nothing is parsed from the agent's
stdout, and nothing the job left behind is ever opened by path.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.inert_text import clean_metrics, inert, job_output
from researchbench.benchmark.common.safefs import UnsafeOutput, discard_tree, read_regular_file
from researchbench.benchmark.executors.base import Executor, Job, JobResult, Limits
from researchbench.benchmark.tasks.manifest import render
from researchbench.benchmark.tasks.shipped_data import shipped_data_paths
from researchbench.benchmark.tasks.workspace import LABELS_GID, PreparedTask

log = logging.getLogger(__name__)

_GIB = 1024**3
_METRICS_CAP = 1 << 20  # bytes of metrics.json the harness will read
_NO_SPACE, _NO_SPACE_TAIL = os.strerror(errno.ENOSPC).encode(), 4096  # its text, in the tail of stderr
_EVALUATOR_DISK = 256 * 1024**2  # what the evaluator may store (it writes one small JSON file)
# Where a phase job sees its dirs in a sandbox that relocates them (base.Job.places): the same on
# every machine, so no host path reaches the job, its output, the prompts or the replay cache.
CODE_PLACE, OUTPUT_PLACE, DATA_PLACE, TEST_INPUTS_PLACE = "/job/code", "/job/out", "/job/data", "/job/test_inputs"


@dataclass
class Outcome:
    exit_code: int | None
    timed_out: bool
    seconds: float  # sandbox run + output collection + evaluator
    stdout: bytes
    stderr: bytes
    metrics: dict[str, float] = field(default_factory=dict)
    primary: float | None = None
    bug_reason: str = ""  # empty when the run produced a valid score; shown to the agent
    note: str = ""  # what the harness set aside from a valid score (non-finite secondary metrics)
    cpu_seconds: float | None = None  # CPU time of the job's processes (not the evaluator's); None if unknown
    clock: str = "wall"  # what the step limit bound: "cpu" (the job's CPU time) or "wall" (JobResult.clock)
    peak_open_files: int | None = None  # most files the job's processes held at once (JobResult)
    wall_limit_s: float | None = None  # the wall-clock limit the job ran under: its limit or the CPU clock's backstop
    time_limit: dict[str, object] = field(default_factory=dict)  # the step limit, its clock and why (JobResult.time_limit)
    # wall seconds of each part (materialize, job, collect, evaluate): benchmarks/experiment_overhead.py
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.bug_reason


def materialize(prepared: PreparedTask, files: dict[str, str], code_dir: Path) -> list[Path]:
    """Write baseline + node files into a fresh code_dir; return the harness-owned paths (mounted read-only)."""
    discard_tree(code_dir)
    shutil.copytree(prepared.baseline_dir, code_dir)
    spec = prepared.spec
    owned = [code_dir / rel for rel in prepared.baseline_files() if not spec.is_editable(rel)]
    for rel, text in files.items():
        parts = PurePosixPath(rel).parts
        if not spec.is_editable(rel) or PurePosixPath(rel).is_absolute() or ".." in parts:
            raise ValueError(f"refusing to write non-editable file {rel}")
        target = code_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return owned


def phase_job(prepared: PreparedTask, phase: str, scratch: Path, timeout_s: float,
              owned: list[Path] | tuple[Path, ...] = (), seed: int = 0) -> Job:
    """The sandboxed job of a val or test phase, with what it must never see named in `hidden`."""
    spec = prepared.spec
    code_dir, output_dir = scratch / "code", scratch / "output"
    readonly = [prepared.public_dir, *owned]
    hidden = [prepared.labels_dir, *spec.source_dirs, scratch.parent]  # scratch.parent: the run's results
    if phase == "test":
        readonly.append(prepared.test_inputs_dir)
    else:
        hidden.append(prepared.test_inputs_dir)
    values = dict(python=sys.executable, code=str(code_dir), data=str(prepared.public_dir),
                  output=str(output_dir), phase=phase, test_inputs=str(prepared.test_inputs_dir), seed=str(seed))
    argv = render(spec.phases[phase], **values)  # the manifest schema keeps {test_inputs} out of val
    places = [(code_dir, CODE_PLACE), (output_dir, OUTPUT_PLACE), (prepared.public_dir, DATA_PLACE)]
    if phase == "test":
        places.append((prepared.test_inputs_dir, TEST_INPUTS_PLACE))
    res = spec.resources
    return Job(
        argv=tuple(argv), workdir=code_dir, stdout_path=scratch / "stdout.txt", stderr_path=scratch / "stderr.txt",
        timeout_s=timeout_s, readonly=tuple(readonly), public=(prepared.public_dir,), writable=(output_dir,),
        limits=Limits(memory_gb=res.memory_gb, cpus=res.cpus), gpus=res.gpus, gpu_type=res.gpu_type,
        disk_bytes=int(res.disk_gb * _GIB), hidden=tuple(hidden), masked=(*spec.source_dirs, *shipped_data_paths()),
        places=tuple(places),
    )


def data_path_in_jobs(prepared: PreparedTask, executor: Executor) -> str:
    """The public data dir as the executor's jobs see it (what an agent's commands must name)."""
    return _as_jobs_see(executor, prepared.public_dir, DATA_PLACE)


def _as_jobs_see(executor: Executor, host: Path, place: str) -> str:
    """A phase job's dir as the executor shows it: its fixed place where the executor relocates."""
    return place if executor.relocates else str(host)


def check_isolation(prepared: PreparedTask, executor: Executor, run_dir: Path) -> None:
    """At start-up: refuse, with one line, a layout in which agent code could see hidden data."""
    for phase in ("val", "test"):
        problem = executor.exposure(phase_job(prepared, phase, run_dir / "scratch" / "check", 1.0))
        if problem:
            raise UserError(f"refusing to run: {problem} (RESEARCHBENCH_WORKSPACE and results_dir choose "
                            "where data and results live)")


def check_cache_dir(prepared: PreparedTask, executor: Executor, run_dir: Path, cache_dir: str | None) -> None:
    """At start-up: refuse, with one line, an explicit `llm.cache_dir` inside a folder bound into jobs.

    The cache holds the LLM's recorded replies (this run's and others'): agent code that could read it would
    see what other runs were told, and one that could write it would script a later replay."""
    if not cache_dir:
        return
    target = Path(cache_dir).expanduser().absolute()
    for phase in ("val", "test"):
        job = replace(phase_job(prepared, phase, run_dir / "scratch" / "check", 1.0), hidden=(target,))
        if executor.exposure(job):
            raise UserError(f"refusing to run: llm.cache_dir {target} lies inside a folder bound into every job "
                            "(agent code could read or rewrite its recorded replies); choose a folder outside the "
                            "workspace, the interpreter's and the system directories")


def run_phase(prepared: PreparedTask, files: dict[str, str], phase: str, executor: Executor,
              scratch: Path, timeout_s: float, seed: int = 0, keep_outputs: Path | None = None) -> Outcome:
    """Run the val or test phase of `files` and score it; scratch is made fresh and removed after.

    `seed` fills the phases' `{seed}`: the run's seed, so a run's training randomness follows it.
    `keep_outputs`: a new folder that receives a copy of what the evaluator was handed, for re-scoring it
    (`setup.py --measure-noise` half-samples the baseline's predictions); runs leave it None."""
    discard_tree(scratch)
    output_dir, handed, eval_dir = scratch / "output", scratch / "handed", scratch / "eval"
    for path in (output_dir, handed, eval_dir):
        path.mkdir(parents=True)
    started = time.monotonic()
    timings: dict[str, float] = {}
    mark = started

    def lap(part: str) -> None:
        nonlocal mark
        now = time.monotonic()
        timings[part], mark = now - mark, now

    try:
        owned = materialize(prepared, files, scratch / "code")
        job = phase_job(prepared, phase, scratch, timeout_s, owned, seed)
        lap("materialize")
        result = executor.submit(job).result()
        if result.killed_from_outside:  # not the code's doing as far as the harness can tell: one more run
            log.warning("a %s job was SIGKILLed with no limit of its own or OOM kill to explain it; running it "
                        "once more", phase)
            lap("killed_attempt")  # both attempts are charged: a job can kill itself, and nothing here tells
            killed_cpu = result.cpu_seconds
            discard_tree(output_dir)
            output_dir.mkdir()
            result = executor.submit(job).result()
            if killed_cpu is not None and result.cpu_seconds is not None:
                result = replace(result, cpu_seconds=killed_cpu + result.cpu_seconds)
        lap("job")
        outcome = Outcome(exit_code=result.exit_code, timed_out=result.timed_out, seconds=0.0,
                          stdout=job_output(_read(job.stdout_path)).encode(),
                          stderr=job_output(_read(job.stderr_path)).encode(),
                          cpu_seconds=result.cpu_seconds, clock=result.clock,
                          peak_open_files=result.peak_open_files, wall_limit_s=result.wall_limit_s or None,
                          time_limit=result.time_limit(timeout_s))
        outcome.bug_reason = _job_problem(result, timeout_s, outcome.stderr, prepared.spec.resources.disk_gb)
        outcome.timings = timings
        if not outcome.bug_reason:
            outcome.bug_reason = _collect(prepared, output_dir, handed)
            lap("collect")
        if not outcome.bug_reason and keep_outputs is not None:
            shutil.copytree(handed, keep_outputs)
        if not outcome.bug_reason:
            _evaluate(prepared, phase, executor, scratch, handed, eval_dir, outcome)
            lap("evaluate")
        outcome.seconds = round(time.monotonic() - started, 3)
        return outcome
    finally:
        discard_tree(scratch)


def _job_problem(result: JobResult, timeout_s: float, stderr: bytes = b"", disk_gb: float = 0.0) -> str:
    if result.error:
        return f"could not run: {result.error}"
    if result.violation:
        return f"killed: {result.violation}"
    if result.timed_out:
        return f"killed: {result.time_problem(timeout_s)}"
    if result.exit_code != 0:
        if _NO_SPACE in stderr[-_NO_SPACE_TAIL:]:  # the capped job filesystem refused a write (or an fallocate)
            return (f"exit code {result.exit_code}: over the disk limit, a write failed with 'No space left on "
                    f"device' (the code and output dirs hold at most {disk_gb:g} GB, resources.disk_gb)")
        return f"exit code {result.exit_code}{_signal_note(result.exit_code, result.killed_from_outside)}"
    return ""


def _signal_note(exit_code: int | None, outside: bool = False) -> str:
    """What a death by signal means, since no limit of the job's explains it (those are named above): a bare
    "exit code -9" sent an agent hunting for a bug in its code. `outside`: the backend saw no OOM kill either
    (and the rerun died the same way)."""
    if exit_code is None or exit_code >= 0:
        return ""
    try:
        name = signal.Signals(-exit_code).name
    except ValueError:
        return f" (killed by signal {-exit_code})"
    if name == "SIGKILL" and outside:
        return (" (killed by SIGKILL twice, run and rerun: no limit of this job and no out-of-memory kill on the "
                "machine explains it, so the code itself, or a process it started, most likely sent it)")
    if name == "SIGKILL":
        return (" (killed by SIGKILL, not for any limit of this job: the kernel's out-of-memory killer when the "
                "machine itself ran short of memory, or the code killed itself; a smaller peak memory is the usual "
                "remedy)")
    return f" (killed by {name})"


def _collect(prepared: PreparedTask, output_dir: Path, handed: Path) -> str:
    """Copy the declared outputs into `handed`; the reason they cannot be, else ""."""
    cap = int(prepared.spec.evaluation.max_output_mb * 1024**2)
    for rel in prepared.spec.outputs:
        try:
            data = read_regular_file(output_dir, rel, cap, "evaluation.max_output_mb")
        except UnsafeOutput as exc:
            return f"invalid output: {exc}"
        target = handed / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        os.chmod(target, 0o644)
    return ""


def _evaluate(prepared: PreparedTask, phase: str, executor: Executor, scratch: Path, handed: Path,
              eval_dir: Path, outcome: Outcome) -> None:
    """Score the handed-over copies in the evaluator's own sandbox (labels read-only, no network,
    clean environment, the manifest's limits)."""
    spec = prepared.spec
    limits = spec.evaluation
    argv = render(spec.evaluator, python=sys.executable, task_dir=str(spec.task_dir), output=str(handed),
                  labels=str(prepared.labels_dir), metrics=str(eval_dir / "metrics.json"), phase=phase)
    job = Job(argv=tuple(argv), workdir=eval_dir, stdout_path=scratch / "eval_stdout.txt",
              stderr_path=scratch / "eval_stderr.txt", timeout_s=limits.timeout_s,
              readonly=(handed, prepared.labels_dir, spec.task_dir),
              limits=Limits(memory_gb=limits.memory_gb, cpus=limits.cpus), disk_bytes=_EVALUATOR_DISK,
              groups=(LABELS_GID,), local_only=True)  # labels never leave this machine, whatever the backend
    result = executor.submit(job).result()
    if result.error or result.violation:
        outcome.bug_reason = f"the evaluator could not run: {result.error or result.violation}"
        return
    if result.timed_out:
        outcome.bug_reason = (f"the evaluator ran out of time on these predictions: {result.time_problem(limits.timeout_s)} "
                              "(evaluation.timeout_s)")
        return
    if result.exit_code != 0:
        output = _as_jobs_see(executor, scratch / "output", OUTPUT_PLACE)
        reason = _evaluator_reason(prepared, _read(job.stderr_path), result, handed, output)
        outcome.bug_reason = f"invalid predictions: {reason}"
        return
    try:
        raw = json.loads(read_regular_file(eval_dir, "metrics.json", _METRICS_CAP))["metrics"]
        if not isinstance(raw, dict):
            raise TypeError("metrics is not an object")
    except UnsafeOutput as exc:
        outcome.bug_reason = f"the evaluator wrote no usable metrics ({exc})"
        return
    except (ValueError, KeyError, TypeError) as exc:
        outcome.bug_reason = f"the evaluator wrote unreadable metrics: {type(exc).__name__}"
        return
    # what reaches the journal, prompts and reports: safe names, finite values (never NaN/inf), capped count
    metrics, outcome.note = clean_metrics(raw, spec.metric.name)
    primary = metrics.get(spec.metric.name)
    if primary is None:
        outcome.bug_reason = f"the evaluator gave no finite '{spec.metric.name}'"
        return
    outcome.metrics, outcome.primary = metrics, primary


def _evaluator_reason(prepared: PreparedTask, stderr: bytes, result: JobResult, handed: Path, output: str) -> str:
    """The evaluator's one-line verdict on the predictions, in terms of the agent's own output dir.

    A crash (a traceback) is reported without its text: tracebacks name evaluator internals and
    label paths, which the agent has no business seeing.
    """
    text = stderr.decode(errors="replace")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or "Traceback (most recent call last)" in text:
        log.warning("the evaluator of %s crashed (exit %s); its stderr ends:\n%s", prepared.spec.name,
                    result.exit_code, "\n".join(lines[-15:]))
        return f"the evaluator rejected them (exit code {result.exit_code})"
    line = lines[-1].replace(str(handed), output)
    for secret, name in ((prepared.labels_dir, "<labels>"), (prepared.spec.task_dir, "<evaluator>")):
        line = line.replace(str(secret), name)
    return inert(line, multiline=False)[:300]  # it may quote the predictions


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""
