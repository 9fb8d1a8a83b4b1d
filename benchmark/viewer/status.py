"""A run's status, derived honestly: running, finished, aborted, interrupted, or unknown.

What the engine records (benchmark/run/engine.py): summary.json says `running` from the first finished node
on, and `finished`, `interrupted` (Ctrl-C, SIGTERM) or `aborted` (an outage) when the run stops; the journal
gets a `final` record at the end and an `aborted` record on an outage; `run.pid` names the live process
(benchmark/records/owner.py) and is removed when it stops. A run killed hard keeps `running` in its summary
and a stale `run.pid`; a resumed run says `interrupted` until its next node finishes. So a live owner wins,
then what the run wrote last, and a `running` summary nobody owns any more is called what it is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from researchbench.benchmark.records.owner import OWNER_FILE, alive
from researchbench.benchmark.viewer.files import Results
from researchbench.benchmark.viewer.journal_view import JournalView

RUNNING, FINISHED, ABORTED, INTERRUPTED, UNKNOWN = "running", "finished", "aborted", "interrupted", "unknown"
STOPPED = {FINISHED, ABORTED, INTERRUPTED}


def owner_record(results: Results, run_dir: Path) -> dict[str, Any] | None:
    raw = results.read(run_dir / OWNER_FILE, cap=4096)
    if raw is None:
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def derive(summary: dict[str, Any] | None, journal: JournalView, owner: dict[str, Any] | None) -> tuple[str, str]:
    """(status, a note saying how it was told when the files alone do not say it)."""
    live = alive(owner) if owner is not None else None
    written = summary.get("status") if isinstance(summary, dict) else None
    if live is True:
        return RUNNING, "" if written == RUNNING or written is None else f"resumed (its summary still says {written})"
    if owner is not None and live is None and written not in STOPPED:
        return RUNNING, "its process is on another machine or unreadable: not checked"
    if journal.final is not None:
        return FINISHED, ""
    if written in STOPPED:
        return str(written), ""
    if journal.aborted is not None:
        return ABORTED, ""
    if live is False:
        return INTERRUPTED, "its process is gone (killed without a word); the same command resumes it"
    if written == RUNNING:
        return UNKNOWN, "its summary says running, but no process claims the run (run.pid): killed, or an older run"
    return UNKNOWN, "no summary.json yet and no live process"
