"""How many files a job's process may hold open, so that parallel jobs cannot exhaust the host's file table.

Open files are counted host-wide against `fs.file-max`; when it is reached every unprivileged process on
the host gets ENFILE. RLIMIT_NOFILE is per process, and a job may run `Limits.max_processes` of them (its
pids cgroup or RLIMIT_NPROC bounds that), so a job holds at most RLIMIT_NOFILE x max_processes files, and
`capacity` parallel jobs that many times over. The limit is chosen so that all of them together stay
within half of `file-max`, leaving the other half to the harness and the rest of the host; never below
`FLOOR` (a Python job with torch needs a few hundred), never above what the harness itself may set.
"""

from __future__ import annotations

import resource
from pathlib import Path

FILE_MAX = Path("/proc/sys/fs/file-max")
FLOOR = 256
SHARE = 0.5  # of file-max that all parallel jobs together may hold


def file_max(path: Path = FILE_MAX) -> int | None:
    """The host's open-file limit, or None where it cannot be read (then only the inherited limit applies)."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def open_files_limit(capacity: int, max_processes: int, host_max: int | None) -> int:
    """RLIMIT_NOFILE for each process of a job (see the module docstring), clipped to the inherited hard limit."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    ceiling = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if host_max is None:
        return ceiling
    share = int(host_max * SHARE) // max(1, capacity * max_processes)
    return min(ceiling, max(FLOOR, share))


def bound_note(capacity: int, max_processes: int, host_max: int | None) -> str:
    """A warning when even FLOOR files per process let `capacity` jobs exceed the share of file-max; else ""."""
    if host_max is None:
        return ""
    held = open_files_limit(capacity, max_processes, host_max) * capacity * max_processes
    if held <= host_max * SHARE:
        return ""
    return (f"{capacity} parallel jobs of {max_processes} processes with {FLOOR} open files each could hold "
            f"{held} files, over half of this host's fs.file-max ({host_max}): lower executor.max_parallel "
            "or raise fs.file-max")
