"""The leaderboard over a folder of recordings (examples/recorded), as a page: the rows are
benchmark/scoring/leaderboard.py's own (`entry`, the numbers docs/leaderboard.md is generated from), taken from
the finished runs the catalog found (so links out of RESULTS are not followed), grouped per task on its
current version, best mean achievement first (several seeds of one agent make one row), with runs made on an
older version of their task listed apart."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from researchbench.benchmark.scoring.leaderboard import Entry, Standing, entry, standings
from researchbench.benchmark.viewer.catalog import Catalog


@dataclass
class Board:
    tasks: list[tuple[str, str, list[Standing]]] = field(default_factory=list)  # (task, version, ranked)
    stale: list[tuple[Entry, str]] = field(default_factory=list)  # (row, the task's version now)
    notes: list[str] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)  # Entry.where -> run id, for links


def board(catalog: Catalog) -> Board:
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.tasks.manifest import load_task

    tasks = get_registry().tasks
    out, rows, specs = Board(), [], {}
    for folder in catalog.folders().values():
        summary = catalog.summary(folder)  # read inside RESULTS only, and parsed once: entry() takes it
        if summary is None or summary.status != "finished":
            continue
        name = summary.task
        if name not in tasks:
            out.notes.append(f"{folder.id}: task {name!s:.60} is not registered here (left out)")
            continue
        try:
            specs.setdefault(name, load_task(tasks[name]))
            row = entry(folder.path, catalog.results.root, specs[name], summary)
        except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
            out.notes.append(f"{folder.id}: not scored ({type(exc).__name__})")
            continue
        rows.append(row)
        out.ids[row.where] = folder.id
    versions = {name: spec.version for name, spec in specs.items()}
    ranked, stale = standings(rows, versions)
    out.tasks = [(task, versions[task], board) for task, board in ranked]
    out.stale = [(r, versions[r.task]) for r in stale]
    return out


def fmt(value: Any, digits: str = ".4g") -> str:
    """A number for a table cell ('-' when missing or not finite)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return format(value, digits)
