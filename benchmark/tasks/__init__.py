"""Tasks: the manifest (`manifest`: TaskSpec, load_task), its schema versions (`schema`) and its `noise`
block with the sentence agents read of it (`noise`), preparing a
task's workspace (`workspace`, `fetch`, `shipped_data`, `requirements_check`), suites of tasks (`suites`),
and what agents are shown of a task: the data preview (`data_preview`) and the library versions its jobs
run with (`environment`).

May import: `researchbench.benchmark.common` and `task_runtime` (its file-name conventions) only. Everything above
reads a task through here.
"""
from researchbench.benchmark.tasks.manifest import Budget, Metric, TaskSpec, load_task

__all__ = ["Budget", "Metric", "TaskSpec", "load_task"]
