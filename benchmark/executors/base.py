"""What every executor backend accepts and returns: a sandboxed command and its outcome.

Paths inside the sandbox equal host paths (each mount binds a path onto itself), so a job reads the
same on every backend, including the explicit `sandbox: none` fallback.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Limits:
    memory_gb: float = 4.0  # address space per process (RLIMIT_AS) and cgroup memory where available
    max_processes: int = 256  # processes/threads in the job (cgroup pids, else RLIMIT_NPROC)
    max_file_gb: float = 4.0  # largest file the job may write (RLIMIT_FSIZE)
    cpus: int = 1  # advisory: threads env vars (OMP_NUM_THREADS, ...) are set to it


@dataclass(frozen=True)
class Job:
    argv: tuple[str, ...]
    workdir: Path  # cwd; the only writable path besides `writable` and a private /tmp
    stdout_path: Path  # where the (capped) stdout goes, on the host
    stderr_path: Path
    timeout_s: float  # hard wall-clock limit; the whole process tree is killed at it
    readonly: tuple[Path, ...] = ()  # extra host paths made visible read-only (data dirs)
    writable: tuple[Path, ...] = ()  # extra host paths made writable (e.g. an output dir)
    env: dict[str, str] = field(default_factory=dict)  # added to a minimal clean environment
    limits: Limits = Limits()
    gpus: int = 0  # GPU slots this job needs (each gets its own CUDA_VISIBLE_DEVICES)
    gpu_type: str | None = None  # the kind of GPU, for backends that choose one (Modal: "A100", "H100")
    output_cap_bytes: int = 8 * 1024 * 1024  # per stream: head and tail kept, the middle dropped
    network: bool = False
    disk_bytes: int | None = None  # most the job may store under workdir + writable; over it, it is killed
    hidden: tuple[Path, ...] = ()  # must not be visible to the job: the executor refuses to run it if so
    masked: tuple[Path, ...] = ()  # covered by an empty dir or file should a bound system dir contain them
    groups: tuple[int, ...] = ()  # extra groups of the unprivileged job user (e.g. to read labels)
    local_only: bool = False  # must run on this machine (the evaluator: it reads the hidden labels)


@dataclass(frozen=True)
class JobResult:
    exit_code: int | None  # None when killed by the timeout; negative = killed by that signal
    timed_out: bool
    seconds: float
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    error: str = ""  # harness-side failure to run the job at all (empty when it ran)
    violation: str = ""  # the job broke a limit (disk, tree depth) and was killed for it

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.error and not self.violation


def job_problem(job: Job) -> str:
    """Why a job cannot start on any backend (empty argv, relative or missing paths, no timeout), or ""."""
    if not job.argv:
        return "job has an empty argv"
    if not Path(job.workdir).is_dir():
        return f"job workdir {job.workdir} does not exist"
    for path in (job.workdir, *job.readonly, *job.writable):
        if not Path(path).is_absolute():
            return f"job path {path} must be absolute (sandboxes bind paths onto themselves)"
        if not Path(path).exists():
            return f"job path {path} does not exist"
    if job.timeout_s <= 0:
        return f"job timeout_s must be positive, got {job.timeout_s}"
    return ""


class Executor(Protocol):
    name: str
    capacity: int  # jobs that may run at once
    sandbox_mode: str  # "bwrap", "modal", or "none" (recorded loudly in summary.json)

    def submit(self, job: Job) -> Future[JobResult]: ...

    def exposure(self, job: Job) -> str:
        """Why the job's sandbox would show one of `job.hidden`, or "" when it shows none."""
        ...

    def shutdown(self) -> None: ...
