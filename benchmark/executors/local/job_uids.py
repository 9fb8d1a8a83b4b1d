"""Host uids for jobs, one per live job, so that concurrent runs cannot starve each other.

RLIMIT_NPROC counts the processes and threads of a *uid* across the whole host. When every job of
every harness ran as one uid, one job holding 250 threads made another run's baseline fail to start
its BLAS threads: a sweep comparing agents corrupted its own comparison, and a hostile agent could
sabotage a competitor. A root harness therefore runs each job under a uid of a configured range that
no other live job holds, and the job's RLIMIT_NPROC then bounds that job alone.

A uid is held by an flock on its own file in a host-wide directory (`/run/researchbench/job-uids`,
or the system temp dir where /run is not writable). The kernel drops the lock when the holding
process dies, however it dies, so the uids of a killed harness come back by themselves. A uid that
still owns a live process (a job of a harness that is dying right now, or someone else's process in
the range) is skipped.
"""

from __future__ import annotations

import fcntl
import logging
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import Optional

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.executors.local.kill_loop import kill_until_gone

log = logging.getLogger(__name__)

_RUN_DIR = Path("/run")
_SUBDIR = ("researchbench", "job-uids")
_POLL_S = 0.2  # how often a job waiting for a free uid looks again
_RELEASE_WAIT_S = 5.0  # how long a released uid's last processes may take to die
JOB_USER = "researchbench-job"  # the user name a job sees in $USER/$LOGNAME (its uid is in no passwd file)
MAX_UID = 2**31 - 2  # larger uids trip software that stores them in a signed int; 2**32 - 1 means "none"


class UidLease:
    """One held uid; `release()` (idempotent) hands it back."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid = uid
        self._fd: Optional[int] = fd

    def release(self) -> None:
        """Kill what is left of the job's processes, wait until they are gone, then free the uid.

        Every process of a leased uid is the job's, even one that left its process group, cgroup and
        environment marker behind; and the processes of a pid namespace whose init was just killed are
        torn down after the job's main process has been reaped.
        """
        if self._fd is None:
            return
        try:
            left = kill_until_gone(lambda: [pid for pid, uid in _process_uids().items() if uid == self.uid],
                                   _RELEASE_WAIT_S)
            if left:
                log.warning("processes %s of job uid %d survive SIGKILL; the uid stays out of use until they end",
                            left, self.uid)
        finally:
            os.close(self._fd)  # closing the only descriptor drops the flock
            self._fd = None


class JobUids:
    """The range `first` .. `first + count - 1`, leased one uid per job across every harness of the host."""

    def __init__(self, first: int, count: int, lock_dir: Optional[Path] = None) -> None:
        if not (first >= 1 and count >= 1 and first + count - 1 <= MAX_UID):
            raise UserError(
                f"executor.job_uid ({first}) and executor.job_uid_count ({count}) must give a range of "
                f"unprivileged uids within 1..{MAX_UID} (each live job runs as its own uid of it)"
            )
        self.first, self.count = first, count
        self.lock_dir = lock_dir if lock_dir is not None else default_lock_dir()
        _make_private_dir(self.lock_dir)

    def try_acquire(self) -> Optional[UidLease]:
        """The lowest uid of the range that no live job holds and no process owns, or None."""
        busy = uids_with_processes()
        for uid in range(self.first, self.first + self.count):
            if uid in busy:
                continue
            flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(self.lock_dir / str(uid), flags, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return UidLease(uid, fd)
        return None

    def acquire(self, stop: threading.Event) -> Optional[UidLease]:
        """Wait for a free uid; None once `stop` is set (the executor is shutting down)."""
        warned = False
        while not stop.is_set():
            lease = self.try_acquire()
            if lease is not None:
                return lease
            if not warned:
                log.warning("all %d job uids from %d are held by live jobs; waiting for one (raise "
                            "executor.job_uid_count to run more jobs at once)", self.count, self.first)
                warned = True
            stop.wait(_POLL_S)
        return None


def default_lock_dir() -> Path:
    """Where every harness of this host keeps its uid leases (one place, so they see each other's)."""
    base = _RUN_DIR if _RUN_DIR.is_dir() and os.access(_RUN_DIR, os.W_OK) else Path(tempfile.gettempdir())
    return base.joinpath(*_SUBDIR)


def _make_private_dir(path: Path) -> None:
    """Create the lock dir; refuse one someone else could have planted or can write into."""
    try:
        path.mkdir(mode=0o755, parents=True, exist_ok=True)
        infos = [(p, os.lstat(p)) for p in (path.parent, path)]
    except OSError as exc:
        raise UserError(f"cannot create the job uid lock directory {path}: {exc}") from None
    for where, info in infos:
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            raise UserError(
                f"{where} must be a directory owned by uid {os.geteuid()} and writable by it alone (someone "
                f"else made it, or it is a link), since it holds the job uid leases: remove it and start again"
            )


def uids_with_processes() -> set[int]:
    """The real uids of every process this harness can see (zombies too: they still count for RLIMIT_NPROC)."""
    return set(_process_uids().values())


def _process_uids() -> dict[int, int]:
    """pid -> real uid, from /proc/<pid>/status (the owner of /proc/<pid> is root for non-dumpable processes)."""
    found: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{name}/status", os.O_RDONLY | os.O_CLOEXEC)
            try:
                status = os.read(fd, 4096)  # "Uid:" is the ninth line; no buffered file object for one read
            finally:
                os.close(fd)
            found[int(name)] = int(status.split(b"\nUid:", 1)[1].split(None, 1)[0])
        except (OSError, ValueError, IndexError):
            continue  # the process ended meanwhile
    return found
