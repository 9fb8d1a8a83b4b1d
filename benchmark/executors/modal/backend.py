"""Run experiments on Modal: one `modal.Sandbox` per job, the agent loop and the evaluator stay local.

A job's life: create a sandbox (image from the task's requirements, GPU/CPU/memory from the task,
`block_network=True`, a hard lifetime, tags naming the run) -> upload the node's code and small
read-only files as one tar (public data dirs come from a shared read-only Volume, uploaded once per
content hash; any other read-only dir, such as a final test's hidden test inputs, from an ephemeral
Volume of this job alone, deleted after it, so no other job of this run or another can mount it) ->
exec the command as an unprivileged uid with the job's clean environment and timeout, streaming
stdout/stderr into the same capped files as local runs, polling disk use -> kill whatever the job
left running -> download the code dir and output dirs as a tar parsed as hostile input -> terminate
the sandbox, always. Paths inside the sandbox equal host paths, as on every backend.

Time limits are wall-clock here (`JobResult.clock` "wall", `cpu_seconds` None): Modal does not report
a sandbox's CPU time, and each sandbox is given the CPUs it requests (`resources.cpus`), so other
jobs do not slow it the way they do on a shared local machine. The step limit is the exec's timeout; the sandbox's
lifetime adds `lifetime_margin_s` for upload and download.

Jobs marked `local_only` (the evaluator: it reads the hidden labels) never go to Modal; they run in
a local executor with the local sandbox, so labels never leave this machine. Any Modal/network error
becomes a failed job (`JobResult.error`), recorded as a failed step; the run stays resumable.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import sys
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from researchbench.benchmark.common.domains import domain
from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.paths import task_runtime_dir
from researchbench.benchmark.executors.base import Executor, ExecutorConfig, Job, JobResult, job_problem
from researchbench.benchmark.executors.local import LocalExecutor, LocalExecutorConfig
from researchbench.benchmark.executors.local.job_uids import MAX_UID
from researchbench.benchmark.executors.local.sandbox import LAUNCHER, SANDBOX_MODES, job_env
from researchbench.benchmark.executors.modal.image import (
    ImageSpec,
    gpu_string,
    image_spec,
    modal_credentials_problem,
    modal_unreachable_problem,
)
from researchbench.benchmark.executors.modal.scripts import DISK_USAGE, KILL_ALL, SETUP
from researchbench.benchmark.executors.output import CappedWriter
from researchbench.benchmark.executors.remote_files import CappedBuffer, Oversize, pack, unpack

if TYPE_CHECKING:
    from researchbench.benchmark.tasks.manifest import TaskSpec

log = logging.getLogger(__name__)

_GIB = 1024**3
DATA_MOUNT = "/__researchbench/data"  # where the public-data Volume is mounted, read-only
PRIVATE_MOUNT = "/__researchbench/private"  # where a job's own ephemeral Volume is mounted, read-only
UPLOAD_TAR = "/__researchbench/upload.tar"
RUN_TAG = "researchbench-run"
JOB_TAG = "researchbench-job"
MODAL_WALL_WHY = "Modal reports no CPU time"  # JobResult.limit_why: its jobs' limits are wall-clock

@dataclass
class ModalExecutorConfig(ExecutorConfig):
    """Hydra structured config for `executor=modal` (plain types only)."""

    name: str = "modal"
    app_name: str = "researchbench"  # the Modal app the sandboxes belong to (created if missing)
    gpu: Optional[str] = None  # GPU type for jobs that want GPUs: "A100", "H100", "A100-80GB:2"... (else the
    # task's resources.gpu_type, else A100)
    max_parallel: int = domain(4, ge=1)  # sandboxes alive at once (K in flight); raised to `parallel` by the engine
    max_concurrent_starts: int = domain(4, ge=1)  # Sandbox.create calls in flight at once
    python_version: Optional[str] = None  # the image's Python; default: the harness's major.minor
    extra_pip: list[str] = field(default_factory=list)  # added to every image (pinned like requirements)
    lifetime_margin_s: float = domain(600.0, ge=0)  # sandbox lifetime = job timeout + this (upload, download)
    data_volume: str = "researchbench-data"  # Volume holding public data, one dir per content hash
    disk_poll_s: float = domain(2.0, gt=0)  # how often a running job's disk use is measured
    region: Optional[str] = None
    remote_python: str = "python"  # the image's interpreter; the harness's own path is mapped to it
    job_uid: int = domain(65534, ge=1, le=MAX_UID)  # agent code runs as this uid inside the sandbox, never as root
    # the evaluator's local sandbox (as executor.sandbox of executor=local)
    local_sandbox: str = domain("auto", one_of=SANDBOX_MODES)

    def for_run(self, parallel: int, gpus: int, task: str) -> str:
        """A sandbox alive for each of the run's `parallel` jobs; GPUs come with Modal's sandboxes, never short."""
        self.max_parallel = max(int(self.max_parallel), parallel)
        return ""


class JobNotStarted(Exception):
    """The job's command cannot start in the sandbox (its executable is missing)."""


class ModalExecutor(Executor):
    """The Modal backend of the `Executor` protocol (see `researchbench.benchmark.executors.base`).

    `client` is the `modal` module, or a stand-in with the same calls (tests/modal_standin.py).
    """

    sandbox_mode = "modal"
    runs_remotely = True  # its jobs use Modal's CPUs, not this machine's

    def __init__(self, config: Optional[ModalExecutorConfig] = None, *, client: Any = None,
                 local: Optional[LocalExecutor] = None) -> None:
        cfg = config if config is not None else ModalExecutorConfig()
        self.cfg, self.modal = cfg, client if client is not None else modal_client()
        self.name: str = str(cfg.name)
        self.capacity: int = max(1, int(cfg.max_parallel))
        self._local = local or LocalExecutor(LocalExecutorConfig(
            name=f"{self.name}-local", max_parallel=self.capacity, sandbox=str(cfg.local_sandbox)))
        self._starts = threading.Semaphore(max(1, int(cfg.max_concurrent_starts)))
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._app: Any = None
        self._volume: Any = None
        self._uploaded: set[str] = set()
        self._image_spec: ImageSpec = image_spec((), cfg.extra_pip, cfg.python_version)
        self._image: Any = None
        self.run_tag = uuid.uuid4().hex[:16]  # replaced by bind_run with a stable id of the run
        self._live: dict[str, Any] = {}  # sandboxes of running jobs, terminated on shutdown
        self._pool = ThreadPoolExecutor(max_workers=self.capacity, thread_name_prefix=f"researchbench-{self.name}")

    # -- the engine's view ----------------------------------------------------------------------

    def bind_run(self, spec: TaskSpec, run_dir: Path) -> None:
        """Called once by the engine: the task's image, the run's tag, and the orphans of a killed
        harness of this same run (sandboxes tagged with it) terminated before anything starts."""
        self._image_spec = image_spec(spec.requirements, self.cfg.extra_pip, self.cfg.python_version)
        self._image = None
        self.run_tag = run_tag(run_dir)
        try:
            found = self.reap_orphans()
        except Exception as exc:  # unreachable now: jobs will fail and be recorded, the run resumes later
            log.warning("modal: could not look for orphaned sandboxes: %s: %s", type(exc).__name__, exc)
            return
        if found:
            log.warning("modal: terminated %d sandbox(es) left running by an earlier harness of this run", found)

    def reap_orphans(self) -> int:
        count = 0
        for sandbox in self.modal.Sandbox.list(app_id=self._get_app().app_id, tags={RUN_TAG: self.run_tag}):
            if getattr(sandbox, "object_id", None) in self._live:
                continue
            sandbox.terminate()
            count += 1
        return count

    def submit(self, job: Job) -> Future[JobResult]:
        """Queue a job; the future always resolves to a JobResult, never to an exception."""
        if job.local_only:
            return self._local.submit(job)
        return self._pool.submit(self._run_safely, job)

    def exposure(self, job: Job) -> str:
        """Why a hidden path would reach the sandbox: it lies inside a path that is uploaded."""
        if job.local_only:
            return self._local.exposure(job)
        roots = [Path(p) for p in (job.workdir, *job.readonly, *job.writable)]
        for hidden in job.hidden:
            for root in roots:
                if Path(hidden) == root or root in Path(hidden).parents:
                    return (f"{hidden} would be visible to agent code (it lies inside {root}, which is "
                            "uploaded to the Modal sandbox)")
        return ""

    def failure_fix(self) -> str:
        return "check Modal (`modal token info`, the network, the workspace's quota) and executor.* settings"

    def shutdown(self) -> None:
        """Stop: running sandboxes are terminated, queued jobs fail fast, the local side is shut."""
        self._stopping.set()
        with self._lock:
            live = list(self._live.values())
        for sandbox in live:
            _terminate(sandbox)
        self._pool.shutdown(wait=True)
        self._local.shutdown()

    # -- one job ----------------------------------------------------------------------------------

    def _run_safely(self, job: Job) -> JobResult:
        started = time.monotonic()
        if self._stopping.is_set():
            return _failure(started, "executor was shut down before the job started")
        problem = job_problem(job) or self.exposure(job)
        if problem:
            return _failure(started, problem)
        try:
            return self._run(job)
        except JobNotStarted as exc:
            return _failure(started, str(exc))
        except Exception as exc:  # network, auth, quota: a failed step, never a lost future
            log.warning("modal job failed: %s: %s", type(exc).__name__, exc)
            return _failure(started, f"modal: {type(exc).__name__}: {exc}")

    def _run(self, job: Job) -> JobResult:
        links = [(str(p), f"{DATA_MOUNT}/{self._ensure_data(Path(p))}") for p in self._shared_dirs(job)]
        with contextlib.ExitStack() as stack:  # closed last: the job's own Volume outlives its sandbox
            private = None
            if self._private_dirs(job):
                private = stack.enter_context(self.modal.Volume.ephemeral())
                links += self._fill_private(private, job)
            sandbox = self._create(job, private)
            key = getattr(sandbox, "object_id", None) or uuid.uuid4().hex
            with self._lock:
                self._live[key] = sandbox
            try:
                env = job_env(job, list(range(job.gpus)), uuid.uuid4().hex)
                self._upload(sandbox, job, links, env)
                return self._execute(sandbox, job, env)
            finally:
                with self._lock:
                    self._live.pop(key, None)
                _terminate(sandbox)

    def _create(self, job: Job, private: Any = None) -> Any:
        with self._lock:
            if self._image is None:
                self._image = self._image_spec.build(self.modal)
        with self._starts:
            if self._stopping.is_set():
                raise RuntimeError("executor was shut down before the sandbox started")
            return self.modal.Sandbox.create(**self.sandbox_args(job, private))

    def sandbox_args(self, job: Job, private: Any = None) -> dict[str, Any]:
        """The keyword arguments of `modal.Sandbox.create` for a job (separately testable); `private`
        is the job's own Volume (its non-public read-only dirs), mounted read-only beside the shared one."""
        args: dict[str, Any] = dict(
            app=self._get_app(),
            image=self._image if self._image is not None else self._image_spec.build(self.modal),
            tags={RUN_TAG: self.run_tag, JOB_TAG: uuid.uuid4().hex[:12], "image": self._image_spec.key},
            timeout=int(math.ceil(job.timeout_s + self.cfg.lifetime_margin_s)),
            gpu=gpu_string(self.cfg.gpu or job.gpu_type, job.gpus),
            cpu=float(job.limits.cpus),
            memory=int(job.limits.memory_gb * 1024),
            block_network=not job.network,
        )
        volumes = {}
        if self._shared_dirs(job):
            volumes[DATA_MOUNT] = self._get_volume().with_mount_options(read_only=True)
        if private is not None:
            volumes[PRIVATE_MOUNT] = private.with_mount_options(read_only=True)
        if volumes:
            args["volumes"] = volumes
        if self.cfg.region:
            args["region"] = self.cfg.region
        return args  # no command: the sandbox idles until terminated or its lifetime ends

    def _get_app(self) -> Any:
        with self._lock:
            if self._app is None:
                self._app = self.modal.App.lookup(self.cfg.app_name, create_if_missing=True)
            return self._app

    def _get_volume(self) -> Any:
        with self._lock:
            if self._volume is None:
                self._volume = self.modal.Volume.from_name(self.cfg.data_volume, create_if_missing=True)
            return self._volume

    # -- files ------------------------------------------------------------------------------------

    @staticmethod
    def _data_dirs(job: Job) -> list[Path]:
        """Read-only dirs outside the code dir: served from a Volume rather than packed into the upload."""
        work = Path(job.workdir)
        return [Path(p) for p in job.readonly if Path(p).is_dir() and work not in (Path(p), *Path(p).parents)]

    @classmethod
    def _shared_dirs(cls, job: Job) -> list[Path]:
        """Public data dirs: kept in the shared Volume, which every job of every run mounts."""
        public = {Path(p) for p in job.public}
        return [p for p in cls._data_dirs(job) if p in public]

    @classmethod
    def _private_dirs(cls, job: Job) -> list[Path]:
        """Every other data dir (test inputs): only ever in this job's own ephemeral Volume."""
        public = {Path(p) for p in job.public}
        return [p for p in cls._data_dirs(job) if p not in public]

    def _fill_private(self, volume: Any, job: Job) -> list[tuple[str, str]]:
        """Upload the job's private dirs to its own Volume; the links that put them at their paths."""
        links = []
        with volume.batch_upload() as batch:
            for number, path in enumerate(self._private_dirs(job)):
                batch.put_directory(str(path), f"/{number}")
                links.append((str(path), f"{PRIVATE_MOUNT}/{number}"))
        return links

    def _ensure_data(self, path: Path) -> str:
        """The Volume dir holding `path`'s content, uploaded the first time this content is seen."""
        key = f"{path.name}-{_tree_digest(path)}"
        with self._lock:
            if key in self._uploaded:
                return key
        volume = self._get_volume()
        with self._lock:  # one upload per content, even with K jobs starting together
            if key not in self._uploaded:
                present = {entry.path.strip("/") for entry in volume.listdir("/")}
                if key not in present:
                    log.info("modal: uploading %s to volume %s/%s", path, self.cfg.data_volume, key)
                    with volume.batch_upload() as batch:
                        batch.put_directory(str(path), f"/{key}")
                self._uploaded.add(key)
        return key

    def _upload(self, sandbox: Any, job: Job, links: list[tuple[str, str]], env: dict[str, str]) -> None:
        work = Path(job.workdir)
        data = set(self._data_dirs(job))
        files = [Path(p) for p in job.readonly if Path(p) not in data and work not in (Path(p), *Path(p).parents)]
        runtime = task_runtime_dir()  # at its host path, which the job's PYTHONPATH names (job_env)
        sandbox.filesystem.write_bytes(pack([work, *files, Path(runtime)]), UPLOAD_TAR)
        protect = [str(p) for p in job.readonly if work in Path(p).parents] + [runtime]
        sticky = sorted({str(d) for p in protect for d in (Path(p).parent, *Path(p).parents) if work in (d, *d.parents)})
        spec = dict(tar=UPLOAD_TAR, uid=int(self.cfg.job_uid), writable=[str(p) for p in job.writable],
                    links=links, own=[str(work), *map(str, job.writable)], protect=protect, sticky=sticky,
                    exe=self._remote(str(job.argv[0])), path=env.get("PATH", ""), workdir=str(work))
        code, out, err = self._helper(sandbox, [self.cfg.remote_python, "-I", "-S", "-c", SETUP, json.dumps(spec)])
        text = err.decode(errors="replace").strip()
        if code == 3 and text.startswith("cannot start job"):
            raise JobNotStarted(text.splitlines()[-1])
        if code != 0:
            raise RuntimeError(f"setting up the sandbox failed (exit {code}): {text[-300:]}")

    def _download(self, sandbox: Any, job: Job) -> str:
        """Bring back the code dir and writable dirs; the reason they could not be, else ""."""
        roots = [Path(job.workdir), *(Path(p) for p in job.writable)]
        cap = int(job.disk_bytes if job.disk_bytes is not None else 4 * _GIB) + (16 << 20)
        sink = CappedBuffer(cap)
        try:
            self._helper(sandbox, ["tar", "-C", "/", "-cf", "-", *(str(r).lstrip("/") for r in roots)], stdout=sink)
        except Oversize:
            return f"wrote more than {cap / _GIB:.2f} GB to disk (resources.disk_gb)"
        return unpack(sink.getvalue(), roots).violation

    # -- exec ---------------------------------------------------------------------------------------

    def _execute(self, sandbox: Any, job: Job, env: dict[str, str]) -> JobResult:
        """Run the job as the job user; then end what it left running and bring its files back."""
        uid = str(int(self.cfg.job_uid))
        argv = [self._remote(str(a)) for a in job.argv]
        launcher = [self.cfg.remote_python, "-I", "-S", "-c", LAUNCHER, uid, uid, ""]
        out = CappedWriter(Path(job.stdout_path), job.output_cap_bytes)
        err = CappedWriter(Path(job.stderr_path), job.output_cap_bytes)
        violation, code, readers = "", None, []
        started = time.monotonic()
        try:
            proc = sandbox.exec(*launcher, *argv, timeout=max(1, int(math.ceil(job.timeout_s))),
                                workdir=str(job.workdir), env=env, text=False)
            readers = _pump(proc, out, err)
            violation = self._watch(sandbox, job, proc, readers[0])
            if violation or self._stopping.is_set():
                _terminate(sandbox)
            else:
                code = proc.wait()
                seconds = time.monotonic() - started
                # processes the job left behind (they may hold its pipes open) end here
                self._helper(sandbox, [*launcher, self.cfg.remote_python, "-I", "-S", "-c", KILL_ALL])
            for reader in readers:
                reader.join(timeout=10)
        finally:
            stdout_truncated, stderr_truncated = out.close(), err.close()
        if violation or self._stopping.is_set():
            seconds = time.monotonic() - started
            stopped = "" if violation else "executor was shut down while the job was running"
            return JobResult(None, False, seconds, stdout_truncated, stderr_truncated, error=stopped,
                             violation=violation)
        violation = self._download(sandbox, job)
        limit = dict(limit_why=MODAL_WALL_WHY)
        if code == -1:  # Modal's exec timeout: wait() returns -1 instead of raising
            return JobResult(None, True, seconds, stdout_truncated, stderr_truncated, violation=violation, **limit)
        return JobResult(code, False, seconds, stdout_truncated, stderr_truncated, violation=violation, **limit)

    def _watch(self, sandbox: Any, job: Job, proc: Any, stdout_reader: threading.Thread) -> str:
        """Poll disk use until the job ends; the limit it broke, else "".

        Waiting on the stdout reader (it ends when the job's stdout closes, normally at exit) notices
        the end at once without extra calls to Modal; a job that closed its stdout early is polled."""
        roots = [str(job.workdir), *map(str, job.writable)]
        next_check = time.monotonic() + self.cfg.disk_poll_s
        while proc.poll() is None:
            if self._stopping.is_set():
                return ""
            if stdout_reader.is_alive():
                stdout_reader.join(timeout=self.cfg.disk_poll_s)
            else:
                time.sleep(min(0.5, self.cfg.disk_poll_s))
            if job.disk_bytes is None or time.monotonic() < next_check or proc.poll() is not None:
                continue
            next_check = time.monotonic() + self.cfg.disk_poll_s
            code, out, _ = self._helper(sandbox, [self.cfg.remote_python, "-I", "-S", "-c", DISK_USAGE, *roots])
            used = int(out.strip() or 0) if code == 0 else 0
            if used > job.disk_bytes:
                return (f"wrote {used / _GIB:.2f} GB to disk, over the task's limit of "
                        f"{job.disk_bytes / _GIB:.2f} GB (resources.disk_gb)")
        return ""

    def _helper(self, sandbox: Any, argv: list[str], stdout: Any = None) -> tuple[int, bytes, bytes]:
        """Run a harness command in the sandbox as root and wait for it."""
        out = stdout if stdout is not None else CappedBuffer(16 << 20)
        err = CappedBuffer(1 << 20)
        proc = sandbox.exec(*argv, timeout=600, text=False)
        for reader in _pump(proc, out, err):
            reader.join()
        if getattr(out, "error", None) is not None:
            raise out.error
        code = proc.wait()
        return code, out.getvalue() if stdout is None else b"", err.getvalue()

    def _remote(self, arg: str) -> str:
        """The harness's interpreter path becomes the image's interpreter; every other arg is kept."""
        if arg in (sys.executable, os.path.realpath(sys.executable)):
            return self.cfg.remote_python
        return arg


def run_tag(run_dir: Path) -> str:
    """The tag every sandbox of a run carries: the same for every harness process of that run."""
    return hashlib.sha256(str(Path(run_dir).absolute()).encode()).hexdigest()[:16]


def modal_client(who: str = "executor=modal") -> Any:
    """The `modal` module, once credentials exist (checked offline) and Modal accepts them (one hello,
    bounded in time): one line naming the fix if not, before any job starts."""
    problem = modal_credentials_problem(who)
    if problem:
        raise UserError(problem)
    import modal

    problem = modal_unreachable_problem(modal, who)
    if problem:
        raise UserError(problem)
    return modal


def _pump(proc: Any, out: Any, err: Any) -> list[threading.Thread]:
    """Copy both output streams into their sinks on two threads (a sink may raise Oversize: kept on it)."""
    def copy(stream: Any, sink: Any) -> None:
        try:
            for chunk in stream:
                sink.write(chunk if isinstance(chunk, bytes) else str(chunk).encode())
        except Oversize as exc:
            sink.error = exc
        except Exception as exc:  # a broken stream ends the copy; the exit status still counts
            log.debug("modal: output stream ended: %s", exc)

    threads = [threading.Thread(target=copy, args=(s, k), daemon=True) for s, k in ((proc.stdout, out), (proc.stderr, err))]
    for thread in threads:
        thread.start()
    return threads


def _terminate(sandbox: Any) -> None:
    try:
        sandbox.terminate()
    except Exception as exc:  # already gone, or the network is: its lifetime ends it anyway
        log.debug("modal: terminate failed: %s", exc)


def _tree_digest(root: Path) -> str:
    """A content fingerprint of a data dir from names, sizes and mtimes (no full read of GBs)."""
    digest = hashlib.sha256()
    for base, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(base, name)
            stat = os.lstat(path)
            digest.update(f"{os.path.relpath(path, root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _failure(started: float, message: str) -> JobResult:
    return JobResult(None, False, time.monotonic() - started, error=message)
