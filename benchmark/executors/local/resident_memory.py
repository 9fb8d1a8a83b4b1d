"""A GPU job's memory where no cgroup bounds it: its processes' resident memory, sampled once a second.

A job without GPUs is bounded per process by RLIMIT_AS and as a whole by its cgroup's memory limit. A GPU
job cannot have RLIMIT_AS (CUDA maps device memory into its address space), so on a host without a memory
cgroup nothing else would stop it from taking the machine's RAM: this guard sums the resident set of every
process the job has (from /proc/<pid>/statm) and reports a violation once the sum passes the job's limit.
A second of sampling lets a fast allocator overshoot briefly; the cgroup, where there is one, does not.
"""

from __future__ import annotations

import os
import time
from typing import Callable, Iterable, Optional

_PAGE = os.sysconf("SC_PAGE_SIZE")
_GIB = 1024 ** 3


def resident_bytes(pid: int) -> int:
    """Resident memory of `pid` (0 once it is gone or unreadable)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


class ResidentMemory:
    """Checks the summed resident memory of a job's processes against `limit_bytes`, once per interval."""

    def __init__(self, pids: Callable[[], Iterable[int]], limit_bytes: int, interval_s: float = 1.0) -> None:
        self._pids, self._limit, self._interval = pids, limit_bytes, interval_s
        self._next = 0.0
        self.peak = 0

    def check(self) -> str:
        """'' while within the limit, else the violation to report."""
        if time.monotonic() < self._next:
            return ""
        self._next = time.monotonic() + self._interval
        used = sum(resident_bytes(pid) for pid in set(self._pids()))
        self.peak = max(self.peak, used)
        if used <= self._limit:
            return ""
        return (f"its processes held {used / _GIB:.2f} GB of memory, over the job's limit of "
                f"{self._limit / _GIB:g} GB (a GPU job on a host without a memory cgroup: resident memory, "
                "sampled once a second)")


def guard_for(gpu_job: bool, cgroup_bounds_memory: bool, pids: Callable[[], Iterable[int]],
              limit_bytes: int) -> Optional[ResidentMemory]:
    """The guard a job needs: only a GPU job whose memory no cgroup bounds."""
    return ResidentMemory(pids, limit_bytes) if gpu_job and not cgroup_bounds_memory else None
