"""Every run under RESULTS, found by walking the folder (links not followed), with the row the runs list shows.

A run is a folder holding summary.json or a journal (a run still at its baseline has no summary yet; a
recording keeps `journal.jsonl.gz`). Runs are grouped by the sweep whose jobs named them
(`.multirun/<time>/<job>/run.json`, benchmark/records/sweep_jobs.py), else by their folder. The id of a run
is its path relative to RESULTS; pages and the API accept only ids of this list, so no request can name a
path of its own.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from researchbench.benchmark.common.inert_text import inert
from researchbench.benchmark.llm.accounting import cost_text
from researchbench.benchmark.records.journal import BASELINE_ID
from researchbench.benchmark.records.summary import SUMMARY_CAP, SUMMARY_FILE, RunSummary, SummaryError, decode_summary
from researchbench.benchmark.records.sweep_jobs import JOB_RECORD, SWEEP_MARK
from researchbench.benchmark.scoring.keys import llm_source
from researchbench.benchmark.scoring.runs import SKIP_DIRS
from researchbench.benchmark.viewer.files import Results
from researchbench.benchmark.viewer.journal_view import JOURNAL, RECORDED_JOURNAL, JournalCache, JournalView
from researchbench.benchmark.viewer.status import derive, owner_record

SCAN_TTL_S = 2.0  # a scan of the folder is reused this long (every open page polls)
SMALL_FILE = 4 << 20  # config.yaml, a sweep job's run.json (summary.json: records.summary.SUMMARY_CAP)


@dataclass(frozen=True)
class RunFolder:
    id: str  # path relative to RESULTS
    path: Path
    group: str


def number(value: Any) -> float | None:
    """A JSON number as a float; None for anything else (bools, strings, NaN written as text)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _json(results: Results, path: Path) -> dict[str, Any] | None:
    raw = results.read(path, cap=SMALL_FILE)
    try:
        value = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class Catalog:
    """The runs of one results folder, rescanned at most every SCAN_TTL_S."""

    def __init__(self, results: Results):
        self.results = results
        self.journals = JournalCache(results)
        self._scan: tuple[float, dict[str, RunFolder]] = (-SCAN_TTL_S, {})
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ finding runs
    def folders(self) -> dict[str, RunFolder]:
        with self._lock:
            at, found = self._scan
            if time.monotonic() - at >= SCAN_TTL_S:
                found = self._walk()
                self._scan = (time.monotonic(), found)
            return found

    def get(self, run_id: str) -> RunFolder | None:
        """The run with this id, or None: ids are looked up, never turned into paths."""
        return self.folders().get(run_id)

    def _walk(self) -> dict[str, RunFolder]:
        root = self.results.root
        runs: list[Path] = []
        sweeps: dict[str, str] = {}  # real run path -> sweep label
        for here, dirs, files in os.walk(root, followlinks=False):
            path = Path(here)
            if path.name == ".multirun":
                for sweep in sorted(dirs):
                    sweeps.update(self._sweep_runs(path / sweep))
                dirs.clear()
                continue
            if SUMMARY_FILE in files or JOURNAL in files or RECORDED_JOURNAL in files:
                runs.append(path)
                dirs.clear()  # a run's own folders (blobs, scratch, ...) hold no runs
                continue
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS or d == ".multirun")
        out = {}
        for path in sorted(runs):
            rel = self.results.relative(path) or "."
            folder = self.results.relative(path.parent) if path != root else ""
            group = sweeps.get(os.path.realpath(path)) or folder or "."
            out[rel] = RunFolder(rel, path, group)
        return out

    def _sweep_runs(self, sweep: Path) -> dict[str, str]:
        if self.results.stat(sweep / SWEEP_MARK) is None:
            return {}
        label = f"sweep {self.results.relative(sweep)}"
        named = {}
        for job in sorted(p for p in sweep.iterdir() if p.name.isdigit() and not p.is_symlink()):
            record = _json(self.results, job / JOB_RECORD)
            relative = record.get("run_dir") if record else None
            if isinstance(relative, str):
                run = job / relative
                if self.results.inside(run):
                    named[os.path.realpath(run)] = label
        return named

    # ------------------------------------------------------------------ reading one run
    def summary(self, folder: RunFolder) -> RunSummary | None:
        """The run's summary; None when it has none yet or it cannot be read (`summary_read` says why)."""
        return self.summary_read(folder)[0]

    def summary_read(self, folder: RunFolder) -> tuple[RunSummary | None, str]:
        """The run's summary, read through RESULTS' confinement and parsed by the record's own parse
        (benchmark.records.summary); else None and why, in one line ('' when the run has none yet)."""
        raw = self.results.read(folder.path / SUMMARY_FILE, cap=SUMMARY_CAP + 1)  # one over: too large is said
        if raw is None:
            return None, ""
        try:
            return decode_summary(raw, f"{folder.id}/{SUMMARY_FILE}"), ""
        except SummaryError as exc:
            return None, str(exc)

    def config(self, folder: RunFolder) -> dict[str, Any]:
        raw = self.results.read(folder.path / "config.yaml", cap=SMALL_FILE)
        try:
            config = yaml.safe_load(raw) if raw is not None else None
        except yaml.YAMLError:
            config = None
        return config if isinstance(config, dict) else {}

    def journal(self, folder: RunFolder) -> JournalView:
        return self.journals.read(folder.path)

    def row(self, folder: RunFolder) -> dict[str, Any]:
        """One line of the runs list (every string made inert: the client shows them as text)."""
        summary, problem = self.summary_read(folder)
        config = self.config(folder)
        journal = self.journal(folder)
        status, note = derive(summary.raw if summary else None, journal, owner_record(self.results, folder.path))
        note = problem or note  # a summary that cannot be read says so, not "no summary.json yet"
        return {k: inert(v) if isinstance(v, str) else v for k, v in row_fields(folder, summary, config, journal,
                                                                                status, note).items()}


def _name(config: dict[str, Any], key: str) -> str | None:
    section = config.get(key)
    return str(section.get("name")) if isinstance(section, dict) and section.get("name") else None


def row_fields(folder: RunFolder, summary: RunSummary | None, config: dict[str, Any], journal: JournalView,
               status: str, note: str) -> dict[str, Any]:
    """The runs list's columns for one run, from its summary, falling back on its config and journal."""
    used = summary.budget.used if summary else None
    asks = summary.uses_llm if summary and summary.uses_llm is not None else \
        any(n.get("llm_calls") for n in journal.finished.values())
    executed = sum(1 for n in journal.finished.values() if n.get("executed") and n.get("id") != BASELINE_ID)
    row: dict[str, Any] = {
        "id": folder.id, "group": folder.group,
        "agent": (summary.agent if summary else None) or _name(config, "agent") or "?",
        "task": (summary.task if summary else None) or _name(config, "task") or "?",
        "task_version": summary.task_version or "" if summary else "",
        "seed": summary.seed if summary else config.get("seed"),
        "model": llm_source(config, asks) if config else "unknown",
        "status": status, "status_note": note,
        "experiments": number(used.experiments) if used else executed,
        "budget_experiments": None, "nodes": len(journal.finished), "in_flight": len(journal.pending),
        "metric": "", "direction": "", "best_node": None, "best_val": None, "test": None, "achievement": None,
        "usd": number(used.usd) if used else None,
        "cost": cost_text(used.usd, used.offline_llm, used.unknown_cost_calls) if used else "",
        "wall_seconds": None, "updated_at": None,
    }
    if summary is not None:
        best = summary.best
        row.update(budget_experiments=float(summary.budget.limits.experiments), metric=summary.metric.name,
                   direction=summary.metric.direction, best_node=best.node, best_val=best.val, test=best.test,
                   achievement=best.achievement_test, wall_seconds=summary.wall_seconds,
                   updated_at=summary.updated_at)
    return row
