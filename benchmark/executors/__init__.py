"""Executor backends: run a sandboxed job, return its outcome. What every backend shares sits here: the
`Executor` protocol, `ExecutorConfig` and the job types (`base`), the machine's GPUs (`gpu_devices`), capped
output (`output`), file transfer that reads its input as hostile (`remote_files`); each backend is a package
of its own (`local/`: bubblewrap on this machine; `modal/`: Modal's cloud).

Only the standard library is imported here; remote backends (Modal) import their SDK where used.
May import: `researchbench.benchmark.tasks` (types), `researchbench.benchmark.common`.
"""

from researchbench.benchmark.executors.base import Executor, Job, JobResult, Limits
from researchbench.benchmark.executors.local import LocalExecutor, LocalExecutorConfig

__all__ = ["Executor", "Job", "JobResult", "Limits", "LocalExecutor", "LocalExecutorConfig"]
