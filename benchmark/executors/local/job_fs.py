"""A job's own filesystem inside the local sandbox: fixed paths, a size the kernel enforces, copy-back.

A job whose dirs have fixed in-sandbox places (`Job.places`: the code dir at /job/code, the output
dir at /job/out, the public data at /job/data, ...) never sees a host path: its argv, cwd and
/proc/1/cmdline name only the places. Its writable dirs live on one tmpfs mounted at `JOB_ROOT` with
bubblewrap's `--size` set to `Job.disk_bytes`, so a write (or an fallocate) past the task's disk
limit fails with ENOSPC when it is made, and nothing the job stores reaches the host disk while it
runs. Its pages are memory: where the job has a memory cgroup they are charged to it; without one a
job may hold up to `disk_bytes` of memory beyond `memory_gb` (docs/security.md).

The supervisor (`supervisor.py`) runs first inside the sandbox: it drops to the job user (root harness), copies the
harness's host dirs (bound read-only at a staging path) into the tmpfs, runs the job, watches the
tmpfs with `statvfs` (notes when it was full; ends the job at more files than the harness accepts,
since empty files cost kernel memory but no tmpfs blocks), then kills every process left
and streams the writable dirs (not the code dir) back to the harness as a tar on a pipe. The harness
reads that stream as hostile input (`remote_files.unpack`: regular files and dirs only, entry, depth
and byte caps) into the host dirs the job never saw; a host write error there is the harness's
failure and leaves the job's exit code and output untouched.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Optional, Sequence

from researchbench.benchmark.executors.base import Job
from researchbench.benchmark.executors.remote_files import MAX_DEPTH, MAX_ENTRIES, unpack

JOB_ROOT = "/job"  # the capped tmpfs; every writable place lies under it
STAGE_ROOT = "/.researchbench/stage"  # where the host's writable dirs are bound read-only, to copy in
_HEADER_CAP = 4096  # bytes of the supervisor's one-line report the harness will read
_TAR_OVERHEAD = 1024  # bytes of tar headers per entry, at most, in the copy-back stream

# The supervisor is a program file of its own (supervisor.py, standard library only), bound read-only into the
# sandbox at SUPERVISOR_PATH and run as `python -I -S SUPERVISOR_PATH spec argv...`: spec is six lines
# (supervisor_spec), in-sandbox paths and numbers only, no host path (the job can read this argv).
SUPERVISOR_FILE = str(Path(__file__).resolve().with_name("supervisor.py"))  # on the host (the real file, not a link)
SUPERVISOR_PATH = "/.researchbench/supervisor.py"  # inside the sandbox


def place_of(path: str, places: dict[str, str]) -> str:
    """Where a host path appears inside a relocating sandbox (itself when no place covers it)."""
    best = ""
    for host in places:
        if (path == host or path.startswith(host.rstrip("/") + "/")) and len(host) > len(best):
            best = host
    return places[best] + path[len(best):] if best else path


def relocate_arg(arg: str, places: dict[str, str]) -> str:
    """An argv entry with a host path (the whole entry, or the value of `--opt=PATH`) put in its place."""
    key, sep, value = arg.partition("=")
    if sep and value.startswith("/") and not key.startswith("/"):
        return key + sep + place_of(value, places)
    return place_of(arg, places)


def relocation_problem(job: Job) -> str:
    """Why a job's places cannot be honoured, or "" (checked before anything runs)."""
    places = job_places(job)
    for path in (job.workdir, *job.writable):
        inside = places.get(str(path))
        if inside is None or not inside.startswith(JOB_ROOT + "/"):
            return f"job path {path} is writable but has no place under {JOB_ROOT} (Job.places)"
    if any(not inside.startswith("/") or set(inside) & {"\t", "\n", " "} for inside in places.values()):
        return "Job.places must be absolute paths without spaces, tabs or newlines"
    return ""


def job_places(job: Job) -> dict[str, str]:
    return {str(host): inside for host, inside in job.places}


@dataclass
class CopyBack:
    """The harness's end of the supervisor's pipe: its report, then the writable dirs, unpacked."""

    read_fd: int
    roots: dict[str, Path]  # archive prefix ("0", "1", ...) -> host dir
    limit_bytes: int
    header: dict[str, int] = field(default_factory=dict)
    violation: str = ""
    error: str = ""
    _thread: Optional[threading.Thread] = None

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._read, name="researchbench-copy-back", daemon=True)
        self._thread.start()

    def finish(self, timeout_s: float) -> None:
        """Wait for the stream's end (every writer is dead by now, so it comes)."""
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                self.error = "the job's files could not be copied back in time"

    def _read(self) -> None:
        with os.fdopen(self.read_fd, "rb") as stream:
            try:
                line = stream.readline(_HEADER_CAP)
                if not line:
                    return  # the supervisor never reported: the job was killed, or never started
                raw = json.loads(line)
                self.header = {k: int(raw.get(k, 0)) for k in ("full", "files", "apparent")}
                if self.header["apparent"] > self.limit_bytes:
                    return
                budget = self.limit_bytes + _TAR_OVERHEAD * (MAX_ENTRIES + 2)
                self.violation = unpack(_Capped(stream, budget), self.roots, self.limit_bytes, stand_ins=True).violation
            except (ValueError, TypeError, AttributeError):
                self.violation = "sent an unreadable report of its files"
            except OSError as exc:  # the host's disk, not the job
                self.error = (f"the harness could not copy the job's files back to the host ({exc.strerror or exc}); "
                              f"the job itself ran to its end")
            finally:
                while stream.read(1 << 16):  # let the writer finish whatever happened
                    pass


class _Capped:
    """A read-only stream that ends (as if at EOF) after `cap` bytes."""

    def __init__(self, stream: BinaryIO, cap: int) -> None:
        self._stream, self._left = stream, cap

    def read(self, size: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        size = self._left if size is None or size < 0 else min(size, self._left)
        data = self._stream.read(size)
        self._left -= len(data)
        return data


def supervisor_spec(job: Job, fd: int, user: Optional[tuple[int, int, Sequence[int]]]) -> str:
    """The supervisor's one argument (six lines): in-sandbox paths and numbers only, never a host path."""
    places = job_places(job)
    writable = [places[str(p)] for p in dict.fromkeys([job.workdir, *job.writable])]
    lines = [str(fd), " ".join([str(user[0]), str(user[1]), ",".join(map(str, user[2]))]) if user else "",
             f"{JOB_ROOT} {int(job.disk_bytes or 0)} {MAX_ENTRIES} {MAX_DEPTH}",
             "\t".join(STAGE_ROOT + inside for inside in writable), "\t".join(writable),
             "\t".join(places[str(p)] for p in job.writable)]
    return "\n".join(lines)


def copy_back_roots(job: Job) -> dict[str, Path]:
    return {str(i): Path(p) for i, p in enumerate(job.writable)}


def over_limit(header: dict[str, int], limit_bytes: int) -> str:
    """The violation the supervisor's report shows, in words an agent can act on; "" when none."""
    gb = limit_bytes / 1024**3
    if header.get("full"):
        return (f"over the disk limit: its files filled the task's {gb:.2f} GB (resources.disk_gb, code and "
                "output dirs together); writes past it fail with 'No space left on device'")
    if header.get("apparent", 0) > limit_bytes:
        return (f"over the disk limit: its output files add up to {header['apparent'] / 1024**3:.2f} GB "
                f"(sparse files count at their full size), over the task's {gb:.2f} GB (resources.disk_gb)")
    if header.get("files", 0) > MAX_ENTRIES:
        return f"made more than {MAX_ENTRIES} files and directories"
    return ""
