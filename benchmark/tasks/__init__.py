"""Tasks: the manifest (`manifest`: TaskSpec, load_task) and its schema versions (`schema`), preparing a
task's workspace (`workspace`, `fetch`, `shipped_data`, `requirements_check`), suites of tasks (`suites`)
and the data preview agents are shown (`data_preview`).

May import: `benchmark.common` and `task_runtime` (its file-name conventions) only. Everything above
reads a task through here.
"""
from benchmark.tasks.manifest import Budget, Metric, TaskSpec, load_task

__all__ = ["Budget", "Metric", "TaskSpec", "load_task"]
