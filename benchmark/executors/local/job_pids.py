"""Every process a job was seen to have, kept by (pid, start time) so a reused pid is never mistaken for it.

The local executor samples the job's processes while it runs (its cgroup's members or its process tree)
and, once the job is killed, asks which of them still live: a GPU slot goes back to the pool only when
none does (a zombie counts as gone: it holds no memory, device files or GPU context any more).
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional


def _stat(pid: int) -> Optional[tuple[str, str]]:
    """(state, start time in ticks since boot) from /proc/<pid>/stat, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode(errors="replace")
    except OSError:
        return None
    fields = raw.rpartition(")")[2].split()
    try:
        return fields[0], fields[19]
    except IndexError:
        return None


class SeenPids:
    """Wraps a finder of a job's processes; remembers every one it returned."""

    def __init__(self, find: Callable[[], Iterable[int]]) -> None:
        self._find = find
        self.started: dict[int, str] = {}  # pid -> start time

    def __call__(self) -> set[int]:
        pids = set(self._find())
        self.record(pids)
        return pids

    def record(self, pids: Iterable[int]) -> None:
        for pid in pids:
            if pid not in self.started:
                stat = _stat(pid)
                if stat is not None:
                    self.started[pid] = stat[1]

    def alive(self) -> list[int]:
        """Those seen that still run (same pid and start time, not a zombie)."""
        out = []
        for pid, start in self.started.items():
            stat = _stat(pid)
            if stat is not None and stat[1] == start and stat[0] != "Z":
                out.append(pid)
        return sorted(out)
