"""The built-in tasks and executors, registered through the same hooks a third-party plugin uses.

Tasks are the folders under ml_tasks/, plus the entries of $RESEARCHBENCH_TASKS_PATH
(os.pathsep-separated), for tasks that are not worth a plugin package. An entry is either a task
folder itself (it holds a task.yaml) or a folder of task folders; an entry that is missing or holds
no task gets one warning line on stderr, so a typo is not a silent empty registry.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

from researchbench.benchmark.common.paths import REPO_ROOT
from researchbench.benchmark.plugins.manager import ExecutorSpec, hookimpl

TASKS_PATH_ENV = "RESEARCHBENCH_TASKS_PATH"


def task_folders(entry: Path) -> list[Path]:
    """The task folders an entry names: itself when it holds a task.yaml, else its children that do."""
    if (entry / "task.yaml").is_file():
        return [entry]
    return [manifest.parent for manifest in sorted(entry.glob("*/task.yaml"))]


def tasks_path_entries() -> list[Path]:
    return [Path(p).expanduser() for p in os.environ.get(TASKS_PATH_ENV, "").split(os.pathsep) if p.strip()]


@hookimpl
def researchbench_register_tasks(register: Callable[[Path], None]) -> None:
    for folder in task_folders(REPO_ROOT / "ml_tasks"):
        register(folder)
    for entry in tasks_path_entries():
        if not entry.is_dir():
            print(f"warning: {TASKS_PATH_ENV} entry {entry} is not a folder; no tasks from it", file=sys.stderr)
            continue
        found = task_folders(entry)
        if not found:
            print(f"warning: {TASKS_PATH_ENV} entry {entry} holds no task (no task.yaml in it or in its "
                  "sub-folders)", file=sys.stderr)
        for folder in found:
            register(folder)


@hookimpl
def researchbench_register_executors(register: Callable[[ExecutorSpec], None]) -> None:
    from researchbench.benchmark.executors.local import LocalExecutor, LocalExecutorConfig

    from researchbench.benchmark.executors.modal.backend import ModalExecutor, ModalExecutorConfig
    from researchbench.benchmark.executors.modal.image import modal_credentials_problem

    register(ExecutorSpec(name="local", config_class=LocalExecutorConfig, build=LocalExecutor,
                          description="this machine: each job a subprocess in a bubblewrap sandbox without "
                                      "network, under time and memory limits"))
    register(ExecutorSpec(name="modal", config_class=ModalExecutorConfig, build=ModalExecutor,
                          preflight=lambda cfg: modal_credentials_problem(),
                          description="Modal's cloud: each job in its own container, GPUs on request "
                                      "(needs Modal credentials)"))
