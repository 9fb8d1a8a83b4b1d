"""Named task suites (`ml_tasks/suites.yaml`): a selection of tasks used together in sweeps and scoring.

A suite names tasks, never restates their facts (those live in each task's manifest). `lite` is the
fast, discriminative subset for sweeps and CI.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.paths import REPO_ROOT

SUITES_FILE = REPO_ROOT / "ml_tasks" / "suites.yaml"


def load_suites(path: Path = SUITES_FILE) -> dict[str, list[str]]:
    """Suite name -> task names, validated (a mapping of names to non-empty lists of strings)."""
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"{path}: cannot read the suites file ({exc})") from None
    if not isinstance(raw, dict) or not all(
            isinstance(k, str) and isinstance(v, list) and v and all(isinstance(t, str) for t in v)
            for k, v in raw.items()):
        raise UserError(f"{path}: must map each suite name to a non-empty list of task names")
    return raw


def suite_tasks(name: str, path: Path = SUITES_FILE) -> list[str]:
    """The task names of suite `name`; an unknown suite is one line naming the known ones."""
    suites = load_suites(path)
    if name not in suites:
        raise UserError(f"unknown suite '{name}'; known suites: {', '.join(sorted(suites)) or 'none'} "
                        f"(defined in {path})")
    return list(suites[name])
