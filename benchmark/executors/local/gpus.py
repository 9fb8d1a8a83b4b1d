"""GPU slots: each GPU id is `jobs_per_gpu` slots; a running job holds one slot on each of its GPUs.

With the default of one slot per GPU no two running jobs share a GPU. A job needing g GPUs always gets
g distinct ids. Slots go back only through `release`, which the executor calls once every process of
the job is gone (see `LocalExecutor._release_gpus`).
"""

from __future__ import annotations

import threading
from typing import Sequence


class GpuPool:
    """A blocking pool of GPU slots; a job waits until enough distinct GPUs have a free slot, then holds them."""

    def __init__(self, ids: Sequence[int], jobs_per_gpu: int = 1) -> None:
        self.ids = tuple(int(i) for i in ids)
        if len(set(self.ids)) != len(self.ids):
            raise ValueError(f"GPU ids must be distinct, got {list(self.ids)}")
        if int(jobs_per_gpu) < 1:
            raise ValueError(f"jobs_per_gpu must be >= 1, got {jobs_per_gpu}")
        self.jobs_per_gpu = int(jobs_per_gpu)
        self._free = {i: self.jobs_per_gpu for i in self.ids}  # free slots per GPU id
        self._cond = threading.Condition()

    @property
    def capacity(self) -> int:
        """Jobs of one GPU each that may hold slots at once."""
        return len(self.ids) * self.jobs_per_gpu

    def acquire(self, count: int) -> list[int]:
        """Take a slot on each of `count` distinct GPUs (the least used first, then the lowest id),
        waiting for running jobs to give theirs back."""
        if count <= 0:
            return []
        if count > len(self.ids):
            raise ValueError(f"job needs {count} GPU(s) but the executor has {len(self.ids)}")
        with self._cond:
            self._cond.wait_for(lambda: sum(1 for n in self._free.values() if n > 0) >= count)
            ranked = sorted((i for i, n in self._free.items() if n > 0), key=lambda i: (-self._free[i], i))
            taken = sorted(ranked[:count])
            for i in taken:
                self._free[i] -= 1
            return taken

    def release(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        with self._cond:
            for i in ids:
                if self._free[i] >= self.jobs_per_gpu:
                    raise ValueError(f"GPU {i} released more often than it was taken")
                self._free[i] += 1
            self._cond.notify_all()


def slots_problem(ids: Sequence[int], jobs_per_gpu: int, parallel: int, per_job: int, task: str) -> str:
    """Why `parallel` jobs of task `task`, each needing `per_job` GPUs, cannot all hold GPU slots at once
    (one line naming the fix), or ""."""
    if per_job <= 0:
        return ""
    ids, jobs_per_gpu = list(ids), max(1, int(jobs_per_gpu))
    if len(ids) >= per_job and len(ids) * jobs_per_gpu >= parallel * per_job:
        return ""
    enough = list(range(max(per_job, -(-parallel * per_job // jobs_per_gpu))))
    if not ids:
        return (f"task '{task}' needs {per_job} GPU(s) per job but executor.gpus is empty; give "
                f"executor.gpus={enough} (ids of free GPUs on this machine), or run a task without GPUs")
    sharing = f" with executor.jobs_per_gpu={jobs_per_gpu}" if jobs_per_gpu > 1 else ""
    return (f"parallel={parallel} runs {parallel} job(s) of task '{task}' at once, each wanting {per_job} GPU(s), "
            f"but executor.gpus lists {len(ids)}{sharing}; give executor.gpus={enough} (ids of free GPUs) "
            "or lower parallel")
