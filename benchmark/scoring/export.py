"""What every finished run leaves for a person: best_solution/ (the best node's editable files, ready to
use) and report.html (the run's own page). Written by the run itself: at its end, and again by `resume`
of a finished run whose export is missing. The scorer never writes into run directories."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

from researchbench.benchmark.common.safefs import safe_relpath
from researchbench.benchmark.scoring.report import run_html
from researchbench.benchmark.scoring.runs import RunRecord, load_run
from researchbench.benchmark.scoring.solution_readme import README, solution_readme
from researchbench.benchmark.tasks.manifest import TaskSpec, load_task

BEST_DIR = "best_solution"
REPORT = "report.html"


def write_best_files(run: RunRecord, directory: Path) -> bool:
    """The best node's files, from the run's blobs, under `directory`; False when the run has no best."""
    best = run.best
    if best is None:
        return False
    for rel, digest in sorted(best.files.items()):
        safe = safe_relpath(rel)
        if safe is None:
            continue
        out = directory.joinpath(*safe.parts)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(run.blobs.get(digest))
    directory.mkdir(parents=True, exist_ok=True)
    return True


def _task_spec(task: str) -> TaskSpec | None:
    """The run's task manifest for the README's re-run commands; None when it is not registered here."""
    from researchbench.benchmark.plugins.manager import get_registry

    try:
        return load_task(get_registry().tasks[task])
    except Exception:  # an unknown or broken task: the export still happens, without commands
        return None


def export_best_solution(run: RunRecord) -> Path | None:
    """Write the best node's files to <run>/best_solution/ (replacing an older export) with a README.md
    beside them (benchmark/scoring/solution_readme.py); None without a best."""
    target = run.run_dir / BEST_DIR
    tmp = run.run_dir / f".{BEST_DIR}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    if not write_best_files(run, tmp):
        return None
    if README not in run.best.files:  # never overwrite a solution's own README.md
        (tmp / README).write_text(solution_readme(run, _task_spec(run.task)))
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


def export_run(run_dir: Path) -> tuple[Path | None, Path]:
    """best_solution/ and report.html for one run directory; returns their paths."""
    run = load_run(run_dir)
    best = export_best_solution(run)
    report = run.run_dir / REPORT
    tmp = report.with_name(f".{REPORT}.tmp")
    tmp.write_text(run_html(run))
    tmp.replace(report)
    return best, report


def export_after_run(run_dir: Path, say: Callable[[str], None]) -> None:
    """The engine's end-of-run hook: export, and on any failure say so in one line (the run's results,
    already written, are unaffected; `resume` of the finished run writes them again)."""
    try:
        best, report = export_run(run_dir)
    except Exception as exc:  # a report must never turn a finished run into a failed one
        say(f"note: could not write best_solution/ and report.html ({type(exc).__name__}: {exc})")
        return
    say(f"  best solution: {best if best else '(no valid node)'}; report: {report}")
