"""The built-in tasks and executors, registered through the same hooks a third-party plugin uses."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from benchmark.plugins import ExecutorSpec, hookimpl

REPO_ROOT = Path(__file__).resolve().parents[1]


@hookimpl
def researchbench_register_tasks(register: Callable[[Path], None]) -> None:
    for manifest in sorted((REPO_ROOT / "ml_tasks").glob("*/task.yaml")):
        register(manifest.parent)


@hookimpl
def researchbench_register_executors(register: Callable[[ExecutorSpec], None]) -> None:
    from benchmark.executors.local import LocalExecutor, LocalExecutorConfig

    register(ExecutorSpec(name="local", config_class=LocalExecutorConfig, build=LocalExecutor))
