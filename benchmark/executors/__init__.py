"""Executor backends: run a sandboxed job, return its outcome (contract in `base`).

Only the standard library is imported here; remote backends (Modal) import their SDK where used.
"""

from benchmark.executors.base import Executor, Job, JobResult, Limits
from benchmark.executors.local import LocalExecutor, LocalExecutorConfig

__all__ = ["Executor", "Job", "JobResult", "Limits", "LocalExecutor", "LocalExecutorConfig"]
