"""How many files a job's processes hold open, sampled while it runs: a step's resources include them.

Open files are a host-wide resource (`open_files.py` bounds them per job); the peak a job held is
recorded beside its CPU time so that a reader of the journal sees a job that pinned thousands of files
for the length of its wall backstop, even though it cost little CPU. Counted from /proc/<pid>/fd of each
of the job's processes (threads share their process's table); a process whose table cannot be read
(another uid without ptrace rights, or gone) counts as none, and a job none of whose processes could be
read reports None, never 0.
"""

from __future__ import annotations

import os
import time
from typing import Callable, Iterable, Optional


def open_count(pid: int) -> Optional[int]:
    """Files `pid` holds open, or None where its fd table cannot be read."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


class HeldFiles:
    """The peak number of files the job's processes held at once, at most one sample per `interval_s`."""

    def __init__(self, pids: Callable[[], Iterable[int]], interval_s: float = 1.0) -> None:
        self._pids = pids
        self._interval = interval_s
        self._next = 0.0
        self.peak: Optional[int] = None

    def sample(self, force: bool = False) -> None:
        if not force and time.monotonic() < self._next:
            return
        self._next = time.monotonic() + self._interval
        counts = [n for n in (open_count(pid) for pid in self._pids()) if n is not None]
        if counts:
            self.peak = max(self.peak or 0, sum(counts))
