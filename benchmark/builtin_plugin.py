"""The built-in tasks and executors, registered through the same hooks a third-party plugin uses.

Tasks are the folders under ml_tasks/, plus any task folders under the directories listed in
$RESEARCHBENCH_TASKS_PATH (os.pathsep-separated), for tasks that are not worth a plugin package.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from benchmark.plugins import ExecutorSpec, hookimpl

REPO_ROOT = Path(__file__).resolve().parents[1]


@hookimpl
def researchbench_register_tasks(register: Callable[[Path], None]) -> None:
    roots = [REPO_ROOT / "ml_tasks"]
    roots += [Path(p) for p in os.environ.get("RESEARCHBENCH_TASKS_PATH", "").split(os.pathsep) if p]
    for root in roots:
        for manifest in sorted(root.glob("*/task.yaml")):
            register(manifest.parent)


@hookimpl
def researchbench_register_executors(register: Callable[[ExecutorSpec], None]) -> None:
    from benchmark.executors.local import LocalExecutor, LocalExecutorConfig

    from benchmark.executors.modal_backend import ModalExecutor, ModalExecutorConfig
    from benchmark.executors.modal_image import modal_credentials_problem

    register(ExecutorSpec(name="local", config_class=LocalExecutorConfig, build=LocalExecutor))
    register(ExecutorSpec(name="modal", config_class=ModalExecutorConfig, build=ModalExecutor,
                          preflight=lambda cfg: modal_credentials_problem()))
