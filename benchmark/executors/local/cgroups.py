"""A private cgroup per job: memory and process-count limits that bind even for root.

RLIMIT_NPROC does not stop a fork bomb run as root and RLIMIT_AS is per process; a cgroup's
`pids.max` and memory limit cover the whole job tree, and its member list lets the harness kill
every process the job started, including ones that escaped the process group with setsid. Its CPU
accounting (v1 `cpuacct.usage`, v2 `cpu.stat`) sums the CPU time of every process that was ever in
it, the ended ones too, which is what a job's CPU-time limit is measured against.

The job's cgroup is created *under the harness's own cgroup*, so whoever accounts for the harness
keeps accounting for its jobs. Works with cgroup v1 (memory, pids and cpuacct hierarchies) and,
where the controllers are delegated, v2. A v1 hierarchy we cannot write is skipped (without cpuacct
the caller reads CPU time from /proc instead). Anything unwritable makes `JobCgroup.create` return
None: callers then rely on rlimits alone.
"""

from __future__ import annotations

import errno
import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from researchbench.benchmark.executors.local.kill_loop import kill_until_gone

log = logging.getLogger(__name__)

_V1_CONTROLLERS = ("memory", "pids", "cpuacct")
_PREFIX = "researchbench-"
_swept: set[Path] = set()


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(fstype, mount root, mount point, super options) for every cgroup mount we can see."""
    out = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        pre, _, post = line.partition(" - ")
        fields, tail = pre.split(), post.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        out.append((tail[0], fields[3], fields[4], set(tail[2].split(","))))
    return out


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller name, plus "" for the v2 hierarchy."""
    out: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        for name in controllers.split(",") if controllers else [""]:
            out[name] = path
    return out


def _parent_dir(mount_root: str, mount_point: str, own: Optional[str]) -> Optional[Path]:
    """The host directory of our own cgroup in a mounted hierarchy (the mount root if unknown)."""
    base = Path(mount_point)
    if own is not None and (own + "/").startswith(mount_root.rstrip("/") + "/"):
        candidate = base / own[len(mount_root.rstrip("/")) :].lstrip("/")
        if candidate.is_dir():
            return candidate
    return base if base.is_dir() else None


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


@dataclass
class JobCgroup:
    """One job's cgroup directories (one per v1 controller, or a single v2 one)."""

    dirs: list[Path]
    v2: bool = False
    _fds: list[int] = field(default_factory=list)
    _cpu_file: Optional[Path] = None  # cpuacct.usage (v1) or cpu.stat (v2), where this cgroup has one

    @classmethod
    def create(cls, memory_bytes: int, max_pids: int) -> Optional["JobCgroup"]:
        """Make the cgroup and set its limits; None when this host does not let us.

        The name says whose it is (see `owner_tag`), so a later harness can clean up after a killed one.
        """
        name = f"{_PREFIX}{owner_tag()}-{uuid.uuid4().hex[:8]}"
        limits = {"memory": memory_bytes, "pids": max_pids}
        group = cls._create_v1(name, limits) or cls._create_v2(name, limits)
        if group is None:
            return None
        try:
            group._fds = [os.open(d / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC) for d in group.dirs]
        except OSError as exc:
            log.debug("cannot open cgroup.procs: %s", exc)
            group.remove()
            return None
        usage = "cpu.stat" if group.v2 else "cpuacct.usage"
        group._cpu_file = next((d / usage for d in group.dirs if (d / usage).is_file()), None)
        return group

    @classmethod
    def _create_v1(cls, name: str, limits: dict[str, int]) -> Optional["JobCgroup"]:
        own = _own_paths()
        dirs: list[Path] = []
        done: set[str] = set()
        for fstype, root, point, opts in _mounts():
            controllers = [c for c in _V1_CONTROLLERS if c in opts and c not in done]
            if fstype != "cgroup" or not controllers:
                continue
            parent = _parent_dir(root, point, own.get(controllers[0]))
            if parent is None:
                continue
            _sweep_stale(parent)
            path = parent / name
            try:
                path.mkdir()
                if "memory" in controllers:
                    _write(path / "memory.limit_in_bytes", str(limits["memory"]))
                if "pids" in controllers:
                    _write(path / "pids.max", str(limits["pids"]))
            except OSError as exc:
                log.debug("cgroup v1 %s not usable at %s: %s", controllers, parent, exc)
                _rmdir(path)
                continue
            dirs.append(path)
            done.update(controllers)
        return cls(dirs=dirs) if dirs else None

    @classmethod
    def _create_v2(cls, name: str, limits: dict[str, int]) -> Optional["JobCgroup"]:
        own = _own_paths().get("")
        for fstype, root, point, _ in _mounts():
            if fstype != "cgroup2":
                continue
            parent = _parent_dir(root, point, own)
            if parent is None:
                continue
            _sweep_stale(parent)
            path = parent / name
            try:
                controllers = (parent / "cgroup.controllers").read_text().split()
                if not {"memory", "pids"} <= set(controllers):
                    continue
                path.mkdir()
                if not (path / "pids.max").exists():
                    # Delegation may need enabling; this fails where the parent holds processes.
                    _write(parent / "cgroup.subtree_control", "+memory +pids")
                _write(path / "memory.max", str(limits["memory"]))
                if (path / "memory.swap.max").exists():
                    _write(path / "memory.swap.max", "0")
                _write(path / "pids.max", str(limits["pids"]))
            except OSError as exc:
                log.debug("cgroup v2 not usable at %s: %s", parent, exc)
                _rmdir(path)
                continue
            return cls(dirs=[path], v2=True)
        return None

    def join_from_child(self) -> None:
        """Move the calling process into the cgroup; runs in the forked child before exec.

        Writes "0" ("the writer") to file descriptors opened by the parent, so the child does no
        path handling or allocation between fork and exec.
        """
        for fd in self._fds:
            os.write(fd, b"0")

    @property
    def limits_memory(self) -> bool:
        """Whether a memory limit bounds the job (a v1 host may lack the memory hierarchy)."""
        return any((d / name).is_file() for d in self.dirs for name in ("memory.limit_in_bytes", "memory.max"))

    @property
    def limits_pids(self) -> bool:
        """Whether pids.max bounds the job (a v1 host may lack the pids hierarchy, or not let us write it)."""
        return any((d / "pids.max").is_file() for d in self.dirs)

    def cpu_seconds(self) -> Optional[float]:
        """CPU time of every process that was ever in the cgroup; None when it does not account CPU."""
        if self._cpu_file is None:
            return None
        try:
            text = self._cpu_file.read_text()
            if not self.v2:
                return int(text) / 1e9  # nanoseconds
            usage = next(line.split()[1] for line in text.splitlines() if line.startswith("usage_usec "))
            return int(usage) / 1e6
        except (OSError, ValueError, StopIteration, IndexError):
            return None

    def oom_kills(self) -> Optional[int]:
        """Processes the kernel killed for going over the memory limit (v1 memory.oom_control's oom_kill,
        v2 memory.events'); None where this kernel does not count them."""
        for d in self.dirs:
            for name in ("memory.events", "memory.oom_control"):
                try:
                    text = (d / name).read_text()
                except OSError:
                    continue
                for line in text.splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill" and value.strip().isdigit():
                        return int(value)
        return None

    def pids(self) -> set[int]:
        found: set[int] = set()
        for d in self.dirs:
            try:
                found.update(int(p) for p in (d / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                pass
        return found

    def kill_all(self, timeout_s: float = 5.0) -> bool:
        """SIGKILL every member until none is left; True when the cgroup is empty.

        Forking is forbidden first (pids.max = 0) so a fork bomb cannot outrun the loop.
        """
        for d in self.dirs:
            for knob, value in (("pids.max", "0"), ("cgroup.kill", "1")):
                if (d / knob).exists():
                    try:
                        _write(d / knob, value)
                    except OSError:
                        pass
        left = kill_until_gone(self.pids, timeout_s)
        if left:
            log.warning("cgroup %s still has processes after kill: %s", self.dirs, left)
        return not left

    def remove(self) -> None:
        """Close our handles and delete the directories (retrying while members finish dying)."""
        for fd in self._fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds = []
        for d in self.dirs:
            _rmdir(d, wait_s=2.0)


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")[:12]
    except OSError:
        return "noboot"


def _start_time(pid: int | str) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def owner_tag(pid: int | None = None) -> str:
    """boot id, pid namespace, pid and start time of a harness process: together they name exactly
    one process of this host, so "that owner is dead" can be proved rather than guessed."""
    pid = os.getpid() if pid is None else pid
    return f"{_boot_id()}-{_pid_namespace()}-{pid}-{_start_time(pid)}"


def _owner_is_dead(name: str) -> bool:
    """True only for a cgroup made by a harness of this boot, in our pid namespace, whose process is
    gone (its pid is free or now belongs to a process that started later). Anything else, including
    names of another format, another boot or another namespace, is not ours to judge."""
    parts = name[len(_PREFIX):].split("-")
    if len(parts) != 5:
        return False
    boot, pidns, pid, start, _ = parts
    if boot != _boot_id() or pidns != _pid_namespace() or not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return False
    return _start_time(pid) != start


def _sweep_stale(parent: Path) -> None:
    """Once per parent dir: kill and remove job cgroups left by a harness that died mid-job."""
    if parent in _swept:
        return
    _swept.add(parent)
    for path in parent.glob(_PREFIX + "*"):
        if not _owner_is_dead(path.name):
            continue
        log.warning("removing job cgroup %s left behind by a dead harness of this host", path)
        stale = JobCgroup(dirs=[path], v2=(path / "cgroup.controllers").exists())
        stale.kill_all(timeout_s=2.0)
        stale.remove()


def _rmdir(path: Path, wait_s: float = 0.0) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                log.warning("could not remove cgroup %s: %s", path, exc)
                return
            time.sleep(0.02)
