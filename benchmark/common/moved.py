"""Old import paths that third-party plugins and tasks use, kept for one release after the layout change.

A shim module at the old path calls `alias`: the old name then *is* the new module (same objects, so
isinstance checks, monkeypatching and `from old import name` all keep working), and the importer gets a
DeprecationWarning naming the new path, attributed to its own import line (`warnings` skips the import
machinery's frames when it counts the stack level).
"""

from __future__ import annotations

import importlib
import sys
import warnings


def alias(old: str, new: str) -> None:
    """Make module `old` an alias of module `new` and warn the importer that `old` is going away."""
    sys.modules[old] = importlib.import_module(new)
    warnings.warn(f"{old} is deprecated and will be removed in the next release; import {new} instead",
                  DeprecationWarning, stacklevel=3)  # 1 = here, 2 = the shim module, 3 = its importer
