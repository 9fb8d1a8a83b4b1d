"""Old import paths that third-party plugins and tasks use, kept for one release after the layout change.

No file sits at an old path (so version control sees each move as a rename): an import finder answers
for the names in MOVED. The old name then *is* the new module (same objects, so isinstance checks,
monkeypatching and `from old import name` keep working), and the importer gets a DeprecationWarning
naming the new path, attributed to its own import line (`warnings` skips the import machinery's frames).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any, Sequence

MOVED = {
    "benchmark.agent_api": "benchmark.plugins.agent_api",
    "benchmark.task": "benchmark.tasks.manifest",
    "benchmark.journal": "benchmark.records.journal",
    "benchmark.edits": "benchmark.plugins.edits",
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
