"""CPU time of a whole job, every process and thread summed, read while it runs.

A job's CPU-time limit must bind the job, not each process: RLIMIT_CPU is per process, so a job that
forks N workers would get N times its limit. Where the job has a cgroup that accounts CPU, the kernel
sums for us, ended processes included (`JobCgroup.cpu_seconds`). Elsewhere `ProcessTreeCpu` reads
/proc: the job's tree under its main process (inside a bwrap pid namespace every orphan is re-parented
to the namespace's init, which is in that tree), plus, without a pid namespace, processes carrying
the job's environment marker that escaped the tree. Each process counts its own time and the time of
the children it reaped (utime + stime + cutime + cstime), so ended processes are counted through their
parents. Known gap: a process reaped by something outside the job (an escapee's child reaped by the
host's init) takes its time with it after the last reading; only a cgroup closes that gap.
"""

from __future__ import annotations

import os
import time
from collections import deque
from typing import Optional

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> Optional[tuple[int, int, int]]:
    """(parent pid, start time, CPU ticks of itself and of its reaped children) from /proc/<pid>/stat."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw.rpartition(b")")[2].split()  # the command name may hold spaces and parentheses
    try:
        return int(fields[1]), int(fields[19]), sum(int(x) for x in fields[11:15])
    except (IndexError, ValueError):
        return None


def _has_marker(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return needle in b"\0" + f.read()
    except OSError:
        return False


class ProcessTreeCpu:
    """CPU seconds of one job's processes from /proc, at most one scan per `interval_s`.

    Readings never go down: a process that ended between two scans may be missed by one of them
    (never counted twice, as parents are read before their children), and the next scan finds its
    time in the parent that reaped it.
    """

    def __init__(self, root_pid: int, marker: Optional[bytes] = None, interval_s: float = 0.5):
        """`marker`: environment bytes that tag the job's processes, to follow those that left the tree
        (pass it only where there is no pid namespace to keep them in)."""
        self._root = root_pid
        self._marker = marker
        self._interval = interval_s
        self._next = 0.0
        self._seconds = 0.0
        root = _stat(root_pid)
        self._root_start = root[1] if root else 0
        self._escaped: dict[int, tuple[int, int]] = {}  # escaped subtree root -> (start, its own last ticks)
        self._lost_ticks = 0  # last readings of escaped roots that are gone (their children live on as roots)
        self.pids: set[int] = set()  # the job's processes at the last scan

    def seconds(self, force: bool = False) -> float:
        if force or time.monotonic() >= self._next:
            self._next = time.monotonic() + self._interval
            self._seconds = max(self._seconds, self._scan() / _TICKS)
        return self._seconds

    def _scan(self) -> int:
        children: dict[int, list[int]] = {}
        starts: dict[int, int] = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                info = _stat(int(name))
                if info is not None:
                    children.setdefault(info[0], []).append(int(name))
                    starts[int(name)] = info[1]
        roots = [self._root] + self._escapees(children, starts)
        total, seen = 0, set()
        for root in roots:
            ticks, own = self._subtree(root, children, seen)
            if root in self._escaped:
                self._escaped[root] = (self._escaped[root][0], own)
            total += ticks
        self.pids = seen
        for pid, (start, ticks) in list(self._escaped.items()):
            if starts.get(pid) != start:  # ended (reaped outside the job) or its pid reused
                self._lost_ticks += ticks
                del self._escaped[pid]
        return total + self._lost_ticks

    def _escapees(self, children: dict[int, list[int]], starts: dict[int, int]) -> list[int]:
        """Marked processes outside the main tree whose parent is not marked too (subtree roots)."""
        if self._marker is None:
            return []
        in_tree, queue = set(), deque([self._root])
        while queue:
            pid = queue.popleft()
            in_tree.add(pid)
            queue.extend(children.get(pid, ()))
        parent = {pid: ppid for ppid, kids in children.items() for pid in kids}
        marked = {pid for pid, start in starts.items()
                  if pid not in in_tree and start >= self._root_start and _has_marker(pid, self._marker)}
        found = sorted(pid for pid in marked if parent.get(pid) not in marked)
        for pid in found:
            self._escaped.setdefault(pid, (starts[pid], 0))
        return found

    @staticmethod
    def _subtree(root: int, children: dict[int, list[int]], seen: set[int]) -> tuple[int, int]:
        """Ticks of `root` and its descendants, each read after its parent (breadth first), and of
        `root` alone."""
        total, own, queue = 0, 0, deque([root])
        while queue:
            pid = queue.popleft()
            if pid in seen:
                continue
            seen.add(pid)
            info = _stat(pid)
            if info is not None:
                total += info[2]
                own = info[2] if pid == root else own
            queue.extend(children.get(pid, ()))
        return total, own
