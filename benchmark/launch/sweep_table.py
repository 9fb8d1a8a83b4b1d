"""The table a sweep ends with: one row per job, read from each run's summary.json.

Run directories follow from each job's composed config (results_dir/agent/task/run_id), so the
table is the same whichever launcher ran the jobs and however many of them were resumed or no-ops.
Rows come from benchmark.scoring.runs.load_run, the one reader of run directories; rich draws the table. An aborted run
(an outage, not a result) shows no scores, only its cause. The `achievement` column is the project's
headline, printed as the run's summary lines and the scorer print it (benchmark.scoring.normalize).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Sequence

from omegaconf import DictConfig
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from researchbench.benchmark.common.inert_text import inert
from researchbench.benchmark.run.config import default_run_id

COLUMNS = ("agent", "task", "seed", "best val", "hidden test", "achievement", "cost", "where")
NUMERIC = {"seed", "best val", "hidden test", "achievement", "cost"}


def run_dir(cfg: DictConfig) -> Path:
    """Where the run of a composed config lives (the engine's own rule)."""
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.tasks.manifest import load_task

    task = load_task(get_registry().tasks[cfg.task.name]).name
    return Path(cfg.results_dir).absolute() / cfg.agent.name / task / default_run_id(cfg)


def sweep_rows(configs: Sequence[DictConfig]) -> tuple[list[tuple[str, ...]], list[str]]:
    """One row per job, and each job's run status ("missing" when it left no summary)."""
    from researchbench.benchmark.scoring.normalize import headline_text
    from researchbench.benchmark.scoring.runs import load_run

    rows, statuses = [], []
    for cfg in configs:
        where = run_dir(cfg)
        try:
            run = load_run(where)
        except (ValueError, OSError):  # never started, or stopped before its first summary
            rows.append((cfg.agent.name, cfg.task.name, str(cfg.seed), "-", "-", "-", "-", f"{where} (no summary)"))
            statuses.append("missing")
            continue
        status = run.summary.status
        statuses.append(status)
        usd = (run.summary.budget.used.usd if run.summary.budget.used else None) or 0.0
        if status == "aborted":
            rows.append((run.agent, run.task, str(run.seed), "-", "-", "-", f"${usd:.2f}",
                         f"{where} (aborted: {run.summary.abort_cause})"))
            continue
        test = run.score("best", "test")
        rows.append((run.agent, run.task, str(run.seed), _num(run.score("best", "val")), _num(test),
                     "-" if test is None else headline_text(run.metric, test), f"${usd:.2f}",
                     f"{where}" + ("" if status == "finished" else f" ({status})")))
    return rows, statuses


def render(rows: list[tuple[str, ...]]) -> str:
    """The table as plain text, drawn by rich: numbers right-aligned, nothing wrapped or cut (the `where`
    column is a path to copy), no colour; every cell is literal text, never rich markup (a cause may
    quote agent output)."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in COLUMNS:
        table.add_column(column, no_wrap=True, justify="right" if column in NUMERIC else "left")
    for row in rows:
        table.add_row(*(Text(str(value)) for value in row))
    width = Console(file=io.StringIO(), width=10**6).measure(table).maximum
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False, emoji=False)
    console.print(table)
    return "\n".join(line.rstrip() for line in console.file.getvalue().splitlines())


def print_sweep_table(configs: Sequence[DictConfig]) -> list[str]:
    """Print the table; returns the jobs' run statuses, so the sweep's exit code can follow them."""
    rows, statuses = sweep_rows(configs)
    print(inert(f"\nsweep: {len(configs)} run(s)\n{render(rows)}"), flush=True)  # causes quote agent text
    return statuses


def _num(value: object) -> str:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "-"
    return "-" if number != number else f"{number:.4g}"
