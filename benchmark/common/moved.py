"""Old import paths and removed public names that third-party plugins and tasks use, kept for one release.

Modules: no file sits at an old path (so version control sees each move as a rename): an import finder answers
for the names in MOVED. The old name then *is* the new module (same objects, so isinstance checks,
monkeypatching and `from old import name` keep working), and the importer gets a DeprecationWarning
naming the new path, attributed to its own import line (`warnings` skips the import machinery's frames).

Names: a module lists its removed public names in `deprecated_names(...)`, whose module-level `__getattr__`
hands out the replacement and warns where the old name is used. Both answer for one release, then go.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any, Callable, NamedTuple, Sequence

RELEASED_IN = "0.1.0"  # every module path of this release imports (tests/test_moved_paths.py reads its tree from git)
MOVED = {
    "agents.operators": "agents.kit.operators",
    "agents.prompts": "agents.kit.prompts",
    "agents.text": "agents.kit.text",
    "agents.tree": "agents.kit.tree",
    "benchmark.agent_api": "benchmark.contract.agent_api",
    "benchmark.budget": "benchmark.run.budget",
    "benchmark.builtin_plugin": "benchmark.plugins.builtin",
    "benchmark.commands": "benchmark.run.commands",
    "benchmark.config": "benchmark.run.config",
    "benchmark.data_preview": "benchmark.tasks.data_preview",
    "benchmark.display": "benchmark.run.display",
    "benchmark.engine": "benchmark.run.engine",
    "benchmark.errors": "benchmark.common.errors",
    "benchmark.executors.cgroups": "benchmark.executors.local.cgroups",
    "benchmark.executors.gpus": "benchmark.executors.local.gpus",
    "benchmark.executors.modal_backend": "benchmark.executors.modal.backend",
    "benchmark.executors.modal_image": "benchmark.executors.modal.image",
    "benchmark.executors.modal_scripts": "benchmark.executors.modal.scripts",
    "benchmark.executors.sandbox": "benchmark.executors.local.sandbox",
    "benchmark.experiment": "benchmark.run.experiment",
    "benchmark.fetch": "benchmark.tasks.fetch",
    "benchmark.final_test": "benchmark.run.final_test",
    "benchmark.journal": "benchmark.records.journal",
    "benchmark.leak_probe": "benchmark.authoring.leak_probe",
    "benchmark.modal_launch": "benchmark.launch.modal_launch",
    "benchmark.modal_runs": "benchmark.launch.modal_runs",
    "benchmark.preflight": "benchmark.run.preflight",
    "benchmark.requirements_check": "benchmark.tasks.requirements_check",
    "benchmark.safefs": "benchmark.common.safefs",
    "benchmark.scheduler": "benchmark.run.scheduler",
    "benchmark.shipped_data": "benchmark.tasks.shipped_data",
    "benchmark.suites": "benchmark.tasks.suites",
    "benchmark.summary": "benchmark.run.summary",
    "benchmark.sweep": "benchmark.launch.sweep",
    "benchmark.sweep_table": "benchmark.launch.sweep_table",
    "benchmark.task": "benchmark.tasks.manifest",
    "benchmark.task_check": "benchmark.authoring.task_check",
    "benchmark.task_template": "benchmark.authoring.task_template",
    "benchmark.worker": "benchmark.run.worker",
    "benchmark.workspace": "benchmark.tasks.workspace",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old names (after every real finder failed) and loads each as its new module."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: Any = None) -> Any:
        return importlib.util.spec_from_loader(name, self) if name in MOVED else None

    def create_module(self, spec: Any) -> None:
        return None  # a placeholder; exec_module swaps in the real module

    def exec_module(self, module: ModuleType) -> None:
        old, new = module.__name__, MOVED[module.__name__]
        sys.modules[old] = importlib.import_module(new)  # the import system hands out what is here now
        warnings.warn(f"{old} is deprecated and will be removed in the next release; import {new} instead",
                      DeprecationWarning, stacklevel=2)  # 1 = here, 2 = the importer


def install() -> None:
    """Answer for the old names; idempotent. Appended, so a real module always wins."""
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(_MovedModules())


class Lazy(NamedTuple):
    """A name to import when a deprecated alias is first used: `module`.`name`."""

    module: str
    name: str


def deprecated_names(module: str, replacements: dict[str, tuple[Any, str]]) -> Callable[[str], Any]:
    """A module `__getattr__` answering for removed names: `replacements[name] = (object, what to use now)`.

    The object may be a `Lazy("module", "name")`, imported on first use, so a light package (benchmark.llm)
    can answer for names of a heavier module without importing it. Only names missing from the module reach
    `__getattr__`, so a name that is back for real wins."""

    def __getattr__(name: str) -> Any:
        if name not in replacements:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value, instead = replacements[name]
        if isinstance(value, Lazy):
            value = getattr(importlib.import_module(value.module), value.name)
        warnings.warn(f"{module}.{name} is deprecated and will be removed in the next release; {instead}",
                      DeprecationWarning, stacklevel=2)  # 2 = the code that used the name
        return value

    return __getattr__
