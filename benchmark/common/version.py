"""The package version: pyproject.toml's `version` is its one home.

A checkout reads it from pyproject.toml (so an editable install never reports a stale number); an
installed wheel, which has no pyproject.toml beside it, reads its own metadata.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the installed metadata only
    tomllib = None  # type: ignore[assignment]

DISTRIBUTION = "researchbench"
_PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _checkout_version() -> str | None:
    if tomllib is None or not _PYPROJECT.is_file():
        return None
    try:
        project = tomllib.loads(_PYPROJECT.read_text()).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return str(project["version"]) if project.get("name") == DISTRIBUTION and "version" in project else None


def package_version() -> str:
    """researchbench's semantic version, e.g. "0.2.0" ("0+unknown" for a copy that is neither)."""
    try:
        return _checkout_version() or importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"
