"""summary.json, typed and versioned: its schema, the one reader (`read_summary`) and the one writer
(`write_summary`).

Why one place: the scorer, the leaderboard, the viewer, sweeps and the engine's reprint of a finished run
all read a run's summary, and each used to parse the dict its own way with its own presence checks. Here a
field is named once, a summary that lacks what every summary has is refused with one line naming the file,
and a field added later defaults when an older file lacks it.

Versions: the writer stores `format` (SUMMARY_FORMAT); a file without it is format 0, every summary written
before the key existed, and reads the same way. A reader refuses a format newer than its own.

A summary.json may come from a run whose agent code was hostile, or from a folder someone copied in: the
reader never follows a link at the file, never blocks on a FIFO and reads at most SUMMARY_CAP bytes.
docs/records.md documents every field.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from researchbench.benchmark.common.safefs import read_fd, write_text_atomic

SUMMARY_FILE = "summary.json"
SUMMARY_FORMAT = 1  # bump when a field changes in a way a reader must know; add a reader branch for the old one
SUMMARY_CAP = 4 << 20  # bytes; an engine-written summary is a few KB
DIRECTIONS = ("higher", "lower")


class SummaryError(ValueError):
    """summary.json is missing, unreadable, not JSON, not an object or not a run's summary; the message is
    one line that names the file."""


@dataclass(frozen=True)
class MetricRecord:
    """The task metric as the run recorded it (floor and target on the hidden-test scale)."""

    name: str
    direction: str  # "higher" or "lower"
    floor: float  # a trivial predictor's hidden-test score: achievement 0
    target: float  # a strong, justified result: achievement 1
    best_possible: float | None = None  # the best score the metric allows; None where not recorded

    def better(self, a: float, b: float) -> bool:
        """True when score a is strictly better than score b."""
        return a > b if self.direction == "higher" else a < b


@dataclass(frozen=True)
class Scores:
    """A node's validation score and hidden-test score (None: no valid node, or not tested yet)."""

    val: float | None = None
    test: float | None = None


@dataclass(frozen=True)
class BestRecord(Scores):
    """The node the run chose by validation, with its hidden-test score on the task's scale."""

    node: str | None = None
    achievement_test: float | None = None  # clipped to 0..1
    normalized_test: float | None = None  # unclipped
    test_error: str | None = None  # why the final test gave no score


@dataclass(frozen=True)
class Steps:
    experiments: int = 0  # executed search nodes (the baseline not counted)
    nodes: int = 0  # every finished node, the baseline included
    by_status: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class BudgetLimits:
    experiments: int
    compute_hours: float | None = None
    usd: float | None = None
    step_timeout_s: float | None = None


@dataclass(frozen=True)
class BudgetUsed:
    experiments: int | None = None
    compute_hours: float | None = None
    usd: float | None = None  # the known part of the cost
    offline_llm: bool = False  # every call answered offline (or from the cache): the run cost nothing
    tokens: int | None = None
    unknown_cost_calls: int = 0  # calls litellm could not price


@dataclass(frozen=True)
class BudgetRecord:
    limits: BudgetLimits
    clock: str | None = None  # "cpu": step_timeout_s and compute_hours are CPU time; else wall time
    used: BudgetUsed | None = None  # None where the summary did not record it


@dataclass(frozen=True)
class RunSummary:
    """One run's summary.json. `raw` is the file's whole object, for the consumers that pass it on as it is
    (reports, exporters, plugin hooks); read fields through the attributes."""

    agent: str
    task: str
    seed: int
    status: str  # running, finished, interrupted or aborted
    metric: MetricRecord
    baseline: Scores
    best: BestRecord
    budget: BudgetRecord
    steps: Steps
    format: int = 0
    abort_cause: str | None = None  # with status aborted: the outage, in one line
    uses_llm: bool | None = None  # what the agent's spec said; None in summaries older than the key
    task_version: str | None = None
    domain: str | None = None
    run_dir: str | None = None
    sandbox: str | None = None  # bwrap, modal or none
    sandbox_warning: str | None = None  # with sandbox none
    noise: dict[str, Any] | None = None  # what agents were told of the val and test noise (TaskNoise.record)
    wall_seconds: float | None = None
    stop_reason: str | None = None
    llm: dict[str, Any] = field(default_factory=dict)  # LLM usage totals (benchmark.llm.accounting.Usage)
    provenance: dict[str, Any] = field(default_factory=dict)  # as the journal header's (benchmark.run.summary)
    updated_at: float | None = None  # epoch seconds
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


# ---------------------------------------------------------------------------------------------- parsing
def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class _Object:
    """One JSON object of a summary, read field by field: a required field that is absent or of the wrong
    type is a SummaryError naming its dotted path; an optional one of the wrong type reads as absent."""

    raw: dict[str, Any]
    where: str  # the file, for messages
    path: str = ""  # this object's dotted path with a trailing dot ("" at the top)

    def fail(self, key: str, why: str) -> SummaryError:
        return SummaryError(f"{self.where}: {self.path}{key} {why}")

    def need(self, key: str) -> Any:
        if self.raw.get(key) is None:
            raise self.fail(key, "is missing")
        return self.raw[key]

    def obj(self, key: str) -> _Object:
        value = self.need(key)
        if not isinstance(value, dict):
            raise self.fail(key, "is not an object")
        return _Object(value, self.where, f"{self.path}{key}.")

    def text(self, key: str) -> str:
        value = self.need(key)
        if not isinstance(value, str):
            raise self.fail(key, "is not a string")
        return value

    def integer(self, key: str) -> int:
        value = self.need(key)
        if not _is_int(value):
            raise self.fail(key, "is not an integer")
        return int(value)

    def number(self, key: str) -> float:
        value = self.need(key)
        if not _is_number(value):
            raise self.fail(key, "is not a number")
        return float(value)

    def opt_obj(self, key: str) -> _Object | None:
        value: Any = self.raw.get(key)
        return _Object(value, self.where, f"{self.path}{key}.") if isinstance(value, dict) else None

    def opt_number(self, key: str) -> float | None:
        value: Any = self.raw.get(key)
        return float(value) if _is_number(value) else None

    def opt_int(self, key: str, default: int | None = None) -> int | None:
        value: Any = self.raw.get(key)
        return int(value) if _is_int(value) else default

    def opt_text(self, key: str) -> str | None:
        value: Any = self.raw.get(key)
        return value if isinstance(value, str) else None

    def opt_label(self, key: str) -> str | None:
        """A string, or a number written where a string belongs (a version), as text."""
        value: Any = self.raw.get(key)
        return value if isinstance(value, str) else str(value) if _is_number(value) else None

    def opt_dict(self, key: str) -> dict[str, Any] | None:
        value: Any = self.raw.get(key)
        return value if isinstance(value, dict) else None


def _metric(m: _Object) -> MetricRecord:
    direction = m.text("direction")
    if direction not in DIRECTIONS:
        raise m.fail("direction", "is neither 'higher' nor 'lower'")
    return MetricRecord(m.text("name"), direction, m.number("floor"), m.number("target"),
                        m.opt_number("best_possible"))


def _budget(b: _Object) -> BudgetRecord:
    limits, used = b.obj("limits"), b.opt_obj("used")
    return BudgetRecord(
        limits=BudgetLimits(limits.integer("experiments"), limits.opt_number("compute_hours"),
                            limits.opt_number("usd"), limits.opt_number("step_timeout_s")),
        clock=b.opt_text("clock"),
        used=None if used is None else BudgetUsed(
            used.opt_int("experiments"), used.opt_number("compute_hours"), used.opt_number("usd"),
            used.raw.get("offline_llm") is True, used.opt_int("tokens"), used.opt_int("unknown_cost_calls", 0) or 0))


def parse_summary(value: Any, where: str = SUMMARY_FILE) -> RunSummary:
    """A summary's decoded JSON as a RunSummary; SummaryError (naming `where`) when it is not one. The one
    parse: read_summary uses it, and so does the viewer, which reads the bytes through its own confinement."""
    if not isinstance(value, dict):
        raise SummaryError(f"{where} is not a JSON object")
    top = _Object(value, where)
    version = value.get("format", 0)
    if not _is_int(version) or version < 0:
        raise top.fail("format", "is not a format number")
    if version > SUMMARY_FORMAT:
        raise SummaryError(f"{where} was written by a newer researchbench (format {version}; this one reads "
                           f"formats up to {SUMMARY_FORMAT}): upgrade researchbench to read it")
    baseline, best, steps = top.obj("baseline"), top.obj("best"), top.obj("steps")
    by_status = steps.opt_dict("by_status") or {}
    return RunSummary(
        agent=top.text("agent"), task=top.text("task"), seed=top.integer("seed"), status=top.text("status"),
        metric=_metric(top.obj("metric")),
        baseline=Scores(baseline.opt_number("val"), baseline.opt_number("test")),
        best=BestRecord(best.opt_number("val"), best.opt_number("test"), best.opt_label("node"),
                        best.opt_number("achievement_test"), best.opt_number("normalized_test"),
                        best.opt_text("test_error")),
        budget=_budget(top.obj("budget")),
        steps=Steps(steps.opt_int("experiments", 0) or 0, steps.opt_int("nodes", 0) or 0,
                    {str(k): int(v) for k, v in by_status.items() if _is_int(v)}),
        format=version, abort_cause=top.opt_text("abort_cause"),
        uses_llm=value.get("uses_llm") if isinstance(value.get("uses_llm"), bool) else None,
        task_version=top.opt_label("task_version"), domain=top.opt_label("domain"), run_dir=top.opt_text("run_dir"),
        sandbox=top.opt_text("sandbox"), sandbox_warning=top.opt_text("sandbox_warning"),
        noise=top.opt_dict("noise"), wall_seconds=top.opt_number("wall_seconds"),
        stop_reason=top.opt_text("stop_reason"), llm=top.opt_dict("llm") or {},
        provenance=top.opt_dict("provenance") or {}, updated_at=top.opt_number("updated_at"), raw=value)


def decode_summary(data: bytes, where: str = SUMMARY_FILE) -> RunSummary:
    """A summary.json's bytes as a RunSummary (at most SUMMARY_CAP of them); SummaryError naming `where`."""
    if len(data) > SUMMARY_CAP:
        raise SummaryError(f"{where} is larger than {SUMMARY_CAP >> 20} MiB: not a summary the engine wrote")
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError; RecursionError: [[[[...
        reason = " ".join(str(exc).split())[:120]
        raise SummaryError(f"{where} is not JSON ({reason})") from None
    return parse_summary(value, where)


# ---------------------------------------------------------------------------------------------- files
def read_summary(run_dir: Path | str) -> RunSummary:
    """The run's summary.json as a RunSummary; SummaryError with a one-line reason naming the file when it
    is missing, a link (never followed), not a regular file, too large, not JSON or not a summary."""
    path = Path(run_dir) / SUMMARY_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise SummaryError(f"{path} is missing (the run has not written a summary yet)") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SummaryError(f"{path} is a symbolic link (not followed)") from None
        raise SummaryError(f"{path} cannot be opened ({os.strerror(exc.errno or 0)})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SummaryError(f"{path} is not a regular file")
        data = read_fd(fd, SUMMARY_CAP + 1)  # one byte over the cap, so decode_summary can tell
    except OSError as exc:
        raise SummaryError(f"{path} cannot be read ({os.strerror(exc.errno or 0)})") from None
    finally:
        os.close(fd)
    return decode_summary(data, str(path))


def write_summary(run_dir: Path | str, summary: Mapping[str, Any]) -> RunSummary:
    """Write the summary (the dict benchmark.run.summary.build makes) as run_dir/summary.json with the
    current `format`, in one step: the text goes to a hidden temporary file that os.replace puts in place,
    so a reader never sees half a file. Refuses (SummaryError) a summary no reader could read, before
    anything is written. Returns what a reader will read back."""
    path = Path(run_dir) / SUMMARY_FILE
    text = json.dumps({**summary, "format": SUMMARY_FORMAT}, indent=2, sort_keys=True, default=str) + "\n"
    record = decode_summary(text.encode(), str(path))
    write_text_atomic(path, text)
    return record
