"""`python setup.py --new <name> [--from tabular]`: a new task folder from a template that passes
`setup.py --check` as it is, so an author starts from something that works and replaces it piece by piece.

Templates live in `benchmark/authoring/templates/<template>/`; the token `__TASK_NAME__` in their text files is
replaced by the new task's name.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.paths import REPO_ROOT

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
NAME_TOKEN = "__TASK_NAME__"
_NAME = re.compile(r"[a-z0-9][a-z0-9_\-]*")
_TEXT_SUFFIXES = {".py", ".yaml", ".md", ".json", ".txt"}


def templates() -> list[str]:
    return sorted(p.name for p in TEMPLATES_DIR.iterdir() if (p / "task.yaml").is_file())


def create_task(name: str, template: str = "tabular", dest: Path | None = None) -> Path:
    """Create `<dest or ml_tasks>/<name>/` from the template; refuse a bad name or an existing folder."""
    if not _NAME.fullmatch(name):
        raise UserError(f"'{name}' is not a task name; use lower-case letters, digits, '_' or '-' "
                        "(starting with a letter or digit)")
    if template not in templates():
        raise UserError(f"unknown template '{template}'; available: {', '.join(templates())}")
    parent = Path(dest).expanduser().resolve() if dest is not None else REPO_ROOT / "ml_tasks"
    target = parent / name
    if target.exists() or target.is_symlink():
        raise UserError(f"{target} already exists; pick another name or remove it")
    from researchbench.benchmark.plugins.manager import get_registry

    existing = get_registry().tasks.get(name)
    if existing is not None:
        raise UserError(f"a task named '{name}' is already registered ({existing}); pick another name")
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.new-", dir=parent))
    try:
        shutil.copytree(TEMPLATES_DIR / template, staging / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for path in sorted((staging / name).rglob("*")):
            if path.is_file() and path.suffix in _TEXT_SUFFIXES:
                path.write_text(path.read_text().replace(NAME_TOKEN, name))
        os.replace(staging / name, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
