"""Where the checkout is (`ml_tasks/`, `configs/` and the entry points sit at its root, beside `benchmark/`)
and where the `task_runtime` package that jobs import lives."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def task_runtime_dir() -> str:
    """The host folder of the `task_runtime` package (installed as researchbench.task_runtime; jobs import it
    as `task_runtime`), found without importing it: importing it loads pandas, and the harness only binds or
    puts the folder on a job's PYTHONPATH."""
    spec = importlib.util.find_spec("researchbench.task_runtime")
    if spec is None or spec.origin is None:
        raise ImportError("researchbench.task_runtime is not importable; install the checkout with `pip install -e .`")
    return os.path.dirname(os.path.realpath(spec.origin))
