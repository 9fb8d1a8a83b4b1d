"""What every executor backend accepts and returns: a sandboxed command and its outcome.

Paths. A job may give its dirs fixed in-sandbox places (`Job.places`, e.g. the code dir at /job/code):
a backend that honours them (the local bubblewrap sandbox) shows the job only those paths and puts
the host paths in its argv in their places, so nothing about the host leaks into the job, its
output, or prompts built from it. Elsewhere (no places, `sandbox: none`, Modal) paths inside the
sandbox equal host paths.

Time limits. A backend that can account a job's CPU time (the local one) applies `Job.timeout_s` to
the CPU time of the whole job (every process and thread, summed) for jobs without GPUs, so a job
slowed by other load on the machine is not killed for it; a wall-clock backstop (a multiple of the
limit plus a constant, from the backend's config) still ends a job that waits instead of computing.
GPU jobs, and backends that cannot account CPU time (Modal), apply `timeout_s` to wall-clock time.
`JobResult.clock` says which limit a job ran under and `JobResult.limit_why` why (`JobResult.time_limit`
is the record of both that a step keeps).
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Protocol, runtime_checkable

if TYPE_CHECKING:
    from researchbench.benchmark.tasks.manifest import TaskSpec


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
    timeout_s: float  # the time limit: CPU seconds of the whole job, or wall-clock seconds (module docstring)
    readonly: tuple[Path, ...] = ()  # extra host paths made visible read-only (data dirs)
    public: tuple[Path, ...] = ()  # those of `readonly` every job of every run may see (public data): a remote
    # backend may cache them across jobs; any other read-only path reaches this job only (test inputs)
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
    # (host dir, fixed path inside the sandbox); a relocating backend needs a place under /job for the
    # workdir and every writable dir, which then live on a filesystem capped at disk_bytes
    places: tuple[tuple[Path, str], ...] = ()


CPU, WALL = "cpu", "wall"  # JobResult.clock: what the job's timeout_s limited
# JobResult.limit_why: why a job's timeout_s limited the clock it did
CPU_WHY = "CPU job: its CPU time, so load on the machine does not kill it"
GPU_WALL_WHY = "GPU job: GPU time is not CPU time"


def charged_seconds(seconds: float, cpu_seconds: float | None, clock: str) -> float:
    """What one experiment or command costs the compute budget: CPU seconds under a CPU-time limit."""
    return cpu_seconds if clock == CPU and cpu_seconds is not None else seconds


@dataclass(frozen=True)
class JobResult:
    exit_code: int | None  # None when killed for time; negative = killed by that signal
    timed_out: bool  # killed for time: over its CPU-time limit, its wall-clock limit, or the backstop
    seconds: float  # wall-clock
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    error: str = ""  # harness-side failure to run the job at all (empty when it ran)
    violation: str = ""  # the job broke a limit (disk, tree depth) and was killed for it
    cpu_seconds: Optional[float] = None  # CPU time of all its processes; None where the backend cannot tell
    clock: str = WALL  # CPU: timeout_s limited its CPU time (wall_limit_s is the backstop); WALL: wall time
    over_cpu_limit: bool = False  # killed for going over its CPU-time limit (timed_out is True too)
    wall_limit_s: float = 0.0  # the wall-clock limit it ran under (timeout_s, or the backstop)
    peak_open_files: Optional[int] = None  # most files its processes held open at once; None where unmeasured
    limit_why: str = ""  # why timeout_s limited this clock (CPU_WHY, GPU_WALL_WHY, a backend's reason); "" if unsaid
    gpu_memory_held: bool = False  # a process of the job still held GPU memory when its GPU slot was handed back
    # SIGKILLed with no limit of the job's and no out-of-memory kill on the host to explain it: a process outside
    # the job (or the job itself) sent it; the experiment runs such a job once more (benchmark/run/experiment.py)
    killed_from_outside: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.error and not self.violation

    def time_problem(self, timeout_s: float) -> str:
        """Which time limit killed the job, in words an agent can act on; "" when none did."""
        if not self.timed_out:
            return ""
        if self.over_cpu_limit:
            return f"over the CPU-time limit of {timeout_s:g} s (used {self.cpu_seconds or 0.0:.1f} s)"
        if self.clock == CPU:
            used = f"; it used {self.cpu_seconds:.1f} s of CPU" if self.cpu_seconds is not None else ""
            return f"over the wall-clock backstop of {self.wall_limit_s:g} s (its CPU-time limit is {timeout_s:g} s{used})"
        why = f" ({self.limit_why})" if self.limit_why else ""
        return f"over the wall-clock limit of {timeout_s:g} s{why}"

    def time_limit(self, timeout_s: float) -> dict[str, object]:
        """The limit the job ran under, as a step records it: {"kind": "cpu"|"wall", "seconds", "why"},
        with the wall-clock backstop of a CPU-time limit as "backstop_s"."""
        record: dict[str, object] = {"kind": self.clock, "seconds": timeout_s}
        if self.clock == CPU:
            record["backstop_s"] = self.wall_limit_s
        record["why"] = self.limit_why
        return record


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


@runtime_checkable
class Executor(Protocol):
    """What the engine asks of a backend, all of it: it calls these plainly and never probes for a member.

    The built-in backends subclass this class and so inherit the defaults below (a backend that runs on this
    machine, shows jobs their host paths and needs no word of the run); `completed` gives a plugin's executor
    written to the 0.1 contract (name, capacity, sandbox_mode, submit, exposure, shutdown) the same defaults."""

    name: str
    capacity: int  # jobs that may run at once
    sandbox_mode: str  # "bwrap", "modal", or "none" (recorded loudly in summary.json)
    runs_remotely: bool = False  # jobs run on other machines: this machine's CPUs do not bound `parallel`
    relocates: bool = False  # jobs see their dirs at `Job.places`, not at their host paths

    def submit(self, job: Job) -> Future[JobResult]: ...

    def exposure(self, job: Job) -> str:
        """Why the job's sandbox would show one of `job.hidden`, or "" when it shows none."""
        ...

    def shutdown(self) -> None: ...

    def bind_run(self, spec: TaskSpec, run_dir: Path) -> None:
        """Told the run before its first job (Modal builds the task's image and tags its sandboxes with the run);
        by default there is nothing to do."""

    def failure_fix(self) -> str:
        """What to check when a job could not run at all: the fix the run's abort names."""
        return f"check that executor '{self.name}' can start jobs here (bubblewrap, free disk, process limits)"


class ExecutorConfig:
    """What the engine asks of a backend's config before it builds the executor. A backend's config dataclass
    subclasses it; the defaults suit a backend that brings its own slots and GPUs (Modal's GPUs are remote)."""

    def for_run(self, parallel: int, gpus: int, task: str) -> str:
        """Fit this config, in place, to a run of `parallel` jobs at once that want `gpus` GPUs each; why the
        configured slots cannot hold them, or "" when they can."""
        return ""

    def gpu_problem(self, parallel: int, gpus: int, task: str) -> str:
        """Why `parallel` jobs of `gpus` GPUs each cannot run on the GPUs this config hands out (too few of them,
        or ids this machine does not have), or "" (checked before a run starts)."""
        return ""


def config_of(config: object) -> ExecutorConfig:
    """A backend's config as the engine asks it: itself, or the defaults for a plugin's config that does not
    subclass ExecutorConfig (the 0.1 contract: nothing to fit, no GPU slots on this machine)."""
    return config if isinstance(config, ExecutorConfig) else ExecutorConfig()


def completed(executor: Executor) -> Executor:
    """`executor` with every member of the protocol: itself when it has them all (the built-ins subclass Executor),
    else wrapped so that the members a plugin written to the 0.1 contract lacks answer with their defaults."""
    return executor if isinstance(executor, Executor) else _Completed(executor)


class Delegating(Executor):
    """An executor that is another one, member by member of the protocol: the base of wrappers that change
    one thing (a plugin's missing members, the run's outage rule) and pass everything else through."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner

    @property  # type: ignore[override]
    def name(self) -> str:
        return self.inner.name

    @property  # type: ignore[override]
    def capacity(self) -> int:
        return self.inner.capacity

    @property  # type: ignore[override]
    def sandbox_mode(self) -> str:
        return self.inner.sandbox_mode

    @property  # type: ignore[override]
    def runs_remotely(self) -> bool:
        return self.inner.runs_remotely

    @property  # type: ignore[override]
    def relocates(self) -> bool:
        return self.inner.relocates

    def submit(self, job: Job) -> Future[JobResult]:
        return self.inner.submit(job)

    def exposure(self, job: Job) -> str:
        return self.inner.exposure(job)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def bind_run(self, spec: TaskSpec, run_dir: Path) -> None:
        self.inner.bind_run(spec, run_dir)

    def failure_fix(self) -> str:
        return self.inner.failure_fix()


class _Completed(Delegating):
    """A plugin's executor written before the protocol had `bind_run`, `runs_remotely`, `relocates` and
    `failure_fix`: what it has is its own, what it lacks is the protocol's default. This adapter is the one
    place that asks an executor what it has, so nothing downstream needs to."""

    @property  # type: ignore[override]
    def runs_remotely(self) -> bool:
        return bool(getattr(self.inner, "runs_remotely", False))

    @property  # type: ignore[override]
    def relocates(self) -> bool:
        return bool(getattr(self.inner, "relocates", False))

    def bind_run(self, spec: TaskSpec, run_dir: Path) -> None:
        bind_run = getattr(self.inner, "bind_run", None)
        if bind_run is not None:
            bind_run(spec, run_dir)

    def failure_fix(self) -> str:
        own = getattr(self.inner, "failure_fix", None)
        return own() if own is not None else Executor.failure_fix(self)
