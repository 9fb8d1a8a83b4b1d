"""Which runs count, and why the others do not.

- A run that ended in an infrastructure outage (summary.json `"status": "aborted"` with
  `"abort_cause"`) is never scored, even with `--include-unfinished`: its numbers say nothing about
  the agent. Runs not finished (running, interrupted) are not scored unless asked; runs that cannot be
  read are not scored either. Each is listed under "not scored" with its status and cause.
- Within a group (keys.GROUP_KEYS), runs that repeat a seed are one trial by default: the latest by
  finish time is kept and the others are listed, with a note naming them; `repeats_independent`
  keeps every run as a trial (for users measuring LLM sampling noise on purpose).
- A tree that mixes versions of a task gets one note per task; the versions stay apart (the version
  is part of the group key). A tree whose runs of a task come from different environments (lock digest,
  or a machine that differed from the lock) gets one note per task saying so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.records.summary import RunSummary, SummaryError, read_summary
from researchbench.benchmark.scoring.runs import RunRecord, budget_label, find_runs, load_run

FINISHED = "finished"
ABORTED = "aborted"  # the engine's status for an infrastructure outage; `abort_cause` says which
NOT_SCORED_COLUMNS = ("run", "agent", "task", "seed", "status", "cause")


@dataclass
class Filters:
    agents: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    budget: str | None = None  # a budget label (e.g. 50exp/$10/24h) or an experiment count

    def admit(self, summary: RunSummary) -> bool:
        """Whether a run's summary passes the filters."""
        if self.agents and summary.agent not in self.agents:
            return False
        if self.tasks and summary.task not in self.tasks:
            return False
        if self.budget:
            return self.budget in (budget_label(summary), str(summary.budget.limits.experiments))
        return True


@dataclass
class Selection:
    runs: list[RunRecord]
    not_scored: list[dict[str, Any]]  # one row per run left out: NOT_SCORED_COLUMNS
    notes: list[str]  # one line each: repeats counted once, task versions kept apart


def run_key(run: RunRecord) -> tuple[str, ...]:
    """The run's comparison key (keys.GROUP_KEYS): two runs with equal keys and seeds are repeats."""
    return (run.agent, run.task, run.task_version, run.budget_label, run.llm_label, run.config_label)


def _peek(run_dir: Path) -> RunSummary | None:
    """The run's summary, or None when it cannot be read (load_run then says why)."""
    try:
        return read_summary(run_dir)
    except SummaryError:
        return None


def _left_out(run_dir: Path, summary: RunSummary | None, status: str, cause: str) -> dict[str, Any]:
    return {"run": str(run_dir), "agent": summary.agent if summary else "?", "task": summary.task if summary else "?",
            "seed": summary.seed if summary else "?", "status": status, "cause": cause}


def _status_of(summary: RunSummary | None) -> tuple[str, str]:
    """(status, cause) of a run as its summary records them."""
    status = (summary.status if summary else "") or "unknown"
    if summary is not None and (status == ABORTED or status.startswith(ABORTED + ":")):
        cause = summary.abort_cause or status.partition(":")[2].strip() or "no cause recorded"
        return ABORTED, cause
    return status, ""


def select_runs(root: Path, warn: Callable[[str], None], filters: Filters | None = None,
                unfinished: bool = False, repeats_independent: bool = False) -> Selection:
    """The runs to score under root, what was left out and why, and the notes a reader needs."""
    filters = filters or Filters()
    runs: list[RunRecord] = []
    not_scored: list[dict[str, Any]] = []
    for run_dir in find_runs(root):
        summary = _peek(run_dir)
        if summary is not None and not filters.admit(summary):
            continue
        status, cause = _status_of(summary)
        if status == ABORTED:
            not_scored.append(_left_out(run_dir, summary, ABORTED, cause))
            warn(f"note: not scored: {run_dir}: aborted ({cause})")
            continue
        if summary is not None and status != FINISHED and not unfinished:
            not_scored.append(_left_out(run_dir, summary, status, "not finished (resume it, or pass "
                                                                  "--include-unfinished to score it as it stands)"))
            warn(f"note: not scored: {run_dir}: status '{status}', not finished "
                 f"(resume it, or pass --include-unfinished)")
            continue
        try:
            record = load_run(run_dir)
        except (ValueError, OSError) as exc:
            not_scored.append(_left_out(run_dir, summary, "unreadable", str(exc)))
            warn(f"warning: not scored: {run_dir}: {exc}")
            continue
        if not filters.admit(record.summary):  # a summary rewritten since _peek read it
            continue
        for note in record.warnings:
            warn(f"note: {run_dir}: {note}")
        runs.append(record)
    if not runs:
        wanted = " matching " + ", ".join(f"{k}={v}" for k, v in (("agent", filters.agents), ("task", filters.tasks),
                                                                   ("budget", filters.budget)) if v) \
            if filters.agents or filters.tasks or filters.budget else ""
        left = f" ({len(not_scored)} not scored, listed above)" if not_scored else ""
        hint = " (a budget is a label such as 50exp/$10/24h, or an experiment count)" if filters.budget else ""
        raise UserError(f"no scorable runs{wanted} under {root}{left}; check the filters{hint} or the path")
    runs, repeats, notes = count_repeats(runs, Path(root), repeats_independent)
    not_scored += repeats
    notes += version_notes(runs) + environment_notes(runs)
    for note in notes:
        warn(f"note: {note}")
    return Selection(runs, not_scored, notes)


def count_repeats(runs: list[RunRecord], root: Path, independent: bool
                  ) -> tuple[list[RunRecord], list[dict[str, Any]], list[str]]:
    """Runs of one group that repeat a seed: one trial (the latest) unless `independent`.

    Returns the runs kept (each with its `repeat` index by finish time), rows for the runs set aside
    and one note per repeated seed naming every run.
    """
    def name(run: RunRecord) -> str:
        try:
            return str(run.run_dir.relative_to(root))
        except ValueError:
            return str(run.run_dir)

    by_trial: dict[tuple, list[RunRecord]] = defaultdict(list)
    for run in runs:
        by_trial[(*run_key(run), run.seed)].append(run)
    kept: list[RunRecord] = []
    dropped: list[dict[str, Any]] = []
    notes: list[str] = []
    for (agent, task, *_rest, seed), same in by_trial.items():
        same.sort(key=lambda r: (r.finished_at, str(r.run_dir)))
        if len(same) == 1:
            kept.append(same[0])
            continue
        names = ", ".join(name(r) for r in same)
        if independent:
            for index, run in enumerate(same):
                run.repeat = index
            kept += same
            notes.append(f"{agent} on {task}, seed {seed}: {len(same)} runs with the same settings ({names}), "
                         f"each counted as a trial (--repeats-independent)")
            continue
        latest = same[-1]
        kept.append(latest)
        notes.append(f"{agent} on {task}, seed {seed}: {len(same)} runs with the same settings ({names}); "
                     f"counted once, keeping the latest ({name(latest)}); pass --repeats-independent to count "
                     f"each as a trial")
        dropped += [{"run": str(r.run_dir), "agent": agent, "task": task, "seed": seed, "status": "repeat",
                     "cause": f"repeats seed {seed} of a run kept instead ({name(latest)})"} for r in same[:-1]]
    order = {id(r): i for i, r in enumerate(runs)}
    kept.sort(key=lambda r: order[id(r)])
    return kept, dropped, notes


def version_notes(runs: list[RunRecord]) -> list[str]:
    """One note per task whose runs used more than one manifest version."""
    versions: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for run in runs:
        versions[run.task][run.task_version] += 1
    notes = []
    for task, counts in sorted(versions.items()):
        if len(counts) > 1:
            listed = "; ".join(f"{v}: {n} run{'s' if n != 1 else ''}" for v, n in sorted(counts.items()))
            notes.append(f"runs of task {task} used different task versions ({listed}); scores of different "
                         f"versions are never pooled: tables show them apart as "
                         + ", ".join(f"{task}@{v}" for v in sorted(counts)))
    return notes


def environment_notes(runs: list[RunRecord]) -> list[str]:
    """One note per task whose scored runs come from more than one environment, or from one that differs
    from the lock: the tables pool them, and a reader must know (a library release can move a score)."""
    environments: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for run in runs:
        environments[run.task][run.environment_label] += 1
    notes = []
    for task, counts in sorted(environments.items()):
        listed = "; ".join(f"{label}: {n} run{'s' if n != 1 else ''}" for label, n in sorted(counts.items()))
        if len(counts) > 1:
            notes.append(f"runs of task {task} come from {len(counts)} environments ({listed}); the tables pool "
                         "them: compare within one environment, or re-run under the lock (docs/environment.md)")
        elif any("(differs:" in label for label in counts):
            notes.append(f"runs of task {task} were made in an environment that differs from the lock ({listed})")
    return notes
