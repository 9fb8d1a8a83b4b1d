"""GPU slots: each running job owns a disjoint set of GPU ids until it ends."""

from __future__ import annotations

import threading
from typing import Sequence


class GpuPool:
    """A blocking pool of GPU ids; a job waits until enough ids are free, then holds them."""

    def __init__(self, ids: Sequence[int]) -> None:
        self.ids = tuple(int(i) for i in ids)
        if len(set(self.ids)) != len(self.ids):
            raise ValueError(f"GPU ids must be distinct, got {list(self.ids)}")
        self._free = list(self.ids)
        self._cond = threading.Condition()

    def acquire(self, count: int) -> list[int]:
        """Take `count` ids (lowest first), waiting for running jobs to return theirs."""
        if count <= 0:
            return []
        if count > len(self.ids):
            raise ValueError(f"job needs {count} GPU(s) but the executor has {len(self.ids)}")
        with self._cond:
            self._cond.wait_for(lambda: len(self._free) >= count)
            self._free.sort()
            taken, self._free = self._free[:count], self._free[count:]
            return taken

    def release(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        with self._cond:
            self._free.extend(ids)
            self._cond.notify_all()
