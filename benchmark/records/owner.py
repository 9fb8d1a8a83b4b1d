"""Which process is running a run right now: `run.pid` in the run dir, written when the engine starts the
search and removed when it stops (finished, interrupted or aborted alike).

Why: summary.json says `running` from the first node on and is rewritten on every node, but a run killed
hard (SIGKILL, out of memory, a power cut) never gets to write `interrupted`; and a resumed run reads
`interrupted` until its first node finishes. Only the process itself can tell, so it names itself: its pid,
the host, and the process's start time (a reused pid then does not pass for the run). Readers such as the
viewer (benchmark/viewer/status.py) ask `alive()`; nothing here is used to keep two runs apart.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

OWNER_FILE = "run.pid"


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/<pid>/stat field 22); None off Linux."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:
        return int(stat.rsplit(")", 1)[1].split()[19])  # fields after the command name, which may hold spaces
    except (IndexError, ValueError):
        return None


def claim(run_dir: Path) -> None:
    """Name this process as the run's owner (replacing what a killed process left behind)."""
    record = {"pid": os.getpid(), "host": socket.gethostname(), "start_ticks": _start_ticks(os.getpid())}
    path = Path(run_dir) / OWNER_FILE
    tmp = path.with_name(f".{OWNER_FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record) + "\n")
    os.replace(tmp, path)


def release(run_dir: Path) -> None:
    """Remove the owner file when this process wrote it (a newer owner's file stays)."""
    path = Path(run_dir) / OWNER_FILE
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def alive(record: object) -> bool | None:
    """Whether the process an owner record names still runs: True, False, or None when this machine cannot
    tell (another host, or a malformed record)."""
    if not isinstance(record, dict):
        return None
    pid, host, ticks = record.get("pid"), record.get("host"), record.get("start_ticks")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or host != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    except OSError:
        return None
    now_ticks = _start_ticks(pid)
    if isinstance(ticks, int) and now_ticks is not None and now_ticks != ticks:
        return False  # the pid was reused by another process
    return True
