"""SIGKILL a set of processes until none is left: the last step of every way a job's processes are found."""

from __future__ import annotations

import os
import signal
import time
from typing import Callable, Iterable


def kill_until_gone(find: Callable[[], Iterable[int]], timeout_s: float) -> list[int]:
    """Kill what `find()` returns until it returns nothing; the pids still there after `timeout_s`
    (empty when all are gone). `find` is asked again each round: a dying fork bomb makes new ones."""
    deadline = time.monotonic() + timeout_s
    while True:
        pids = list(find())
        if not pids or time.monotonic() > deadline:
            return pids
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)
