"""Labelled datasets that installed packages ship, masked in every agent job.

Several tasks draw their data from files a library ships (sklearn's digits, statsmodels' tables,
econml's IHDP covariates). Those files hold the labels the task hides, and the interpreter's
site-packages is mounted read-only in the sandbox, so agent code could otherwise look up a test
input's label by matching it against the shipped copy. Masking them leaves the libraries importable
while their bundled data reads as absent (a dir is empty, a file unreadable). Prepare and the
evaluator are harness code and still see them.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

# (package, glob relative to the package dir): data only, never modules a library imports.
SHIPPED_DATA = (
    ("sklearn", "datasets/data"),
    ("sklearn", "datasets/images"),
    ("statsmodels", "datasets/*/*.csv"),
    ("econml", "data/ihdp"),
)


def _package_dir(name: str) -> Path | None:
    """Where a top-level package lives, found without importing it (None when not installed)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


@lru_cache(maxsize=1)
def shipped_data_paths() -> tuple[Path, ...]:
    """The installed packages' bundled data files and dirs listed in SHIPPED_DATA."""
    paths: list[Path] = []
    for package, pattern in SHIPPED_DATA:
        root = _package_dir(package)
        if root is not None:
            paths += sorted(root.glob(pattern))
    return tuple(paths)
