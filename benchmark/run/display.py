"""What a person watching a run sees: plain lines, or a live view on a terminal.

Plain output (a pipe, a log file, `quiet=true`, tests) is one line per finished node, the same lines
as before parallel runs existed, so logs stay greppable. On a terminal a `rich` live view shows a bar
over the experiment budget, what each of the K in-flight jobs is doing and for how long, the best
score so far, tokens and dollars; finished-node lines scroll above it. Worker threads report what
they are doing, so every method here may be called from any thread.

Lines carry agent text (plans, done reasons, bug reasons, feedback), so every line and job label is
made inert here (benchmark/common/inert_text.py) before it reaches the terminal, and the live view never
parses Rich markup.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from researchbench.benchmark.common.inert_text import inert
from researchbench.benchmark.llm.accounting import cost_text

# what a running job is doing, shown next to it
PROPOSING = "asking the LLM"
PROPOSING_NO_LLM = "proposing"
RUNNING = "running"
ANALYZING = "analyzing"
FINAL_TEST = "final hidden test"


@dataclass(frozen=True)
class Stats:
    """The run's headline numbers at one moment, read when the live view redraws."""

    experiments: int
    budget: int
    best: str  # e.g. "mse=0.0123 (node 0004)", or "n/a"
    tokens: int
    usd: float | None  # None for agents without an LLM
    offline: bool = False  # every LLM call was answered without a provider: it cost nothing


def plural(count: int, noun: str) -> str:
    """'1 experiment', '2 experiments'."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


class Display:
    """Plain output: the banner and notes, one line per finished node unless quiet, the summary."""

    def __init__(self, echo: Callable[[str], None], quiet: bool = False):
        self.echo, self.quiet = echo, quiet

    def attach(self, stats: Callable[[], Stats]) -> None:
        """Where the headline numbers come from (the run, once it exists)."""

    def line(self, text: str) -> None:
        """A line everyone sees (banner, resume notes, warnings, the summary)."""
        self.echo(inert(text))

    def node_line(self, text: str) -> None:
        """The one-line record of a finished node; left out when quiet."""
        if not self.quiet:
            self.echo(inert(text))

    def job(self, key: str, label: str, activity: str) -> None:
        """A job started or moved on to another activity (only the live view shows this)."""

    def job_done(self, key: str) -> None:
        """A job ended."""

    def __enter__(self) -> Display:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


@dataclass
class _Job:
    label: str
    activity: str
    started: float


class RichDisplay(Display):
    """The live terminal view; `stats` is called on every redraw so tokens and $ move while jobs run."""

    def __init__(self, console: Any):
        super().__init__(echo=self._print)
        self.console = console
        self.stats: Callable[[], Stats] | None = None
        self._jobs: dict[str, _Job] = {}
        self._lock = threading.Lock()
        self._live: Any = None

    def attach(self, stats: Callable[[], Stats]) -> None:
        self.stats = stats

    def _print(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def job(self, key: str, label: str, activity: str) -> None:
        with self._lock:
            known = self._jobs.get(key)
            self._jobs[key] = _Job(inert(label, multiline=False), inert(activity, multiline=False),
                                   known.started if known else time.monotonic())

    def job_done(self, key: str) -> None:
        with self._lock:
            self._jobs.pop(key, None)

    def renderable(self) -> Any:
        """The live view as a rich renderable: the budget bar and headline numbers, then the jobs."""
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        assert self.stats is not None, "attach() the run's stats before rendering"
        stats = self.stats()
        head = Table.grid(padding=(0, 2))
        head.add_row(Text("experiments"), ProgressBar(total=max(stats.budget, 1), completed=stats.experiments,
                                                      width=30),
                     Text(f"{stats.experiments}/{stats.budget}"), Text(f"best {stats.best}"),
                     Text(f"tokens {stats.tokens:,}"
                          + (f"  {cost_text(stats.usd, stats.offline)}" if stats.usd is not None else "")))
        jobs = Table(box=None, padding=(0, 2), show_edge=False)
        for column in ("node", "action", "doing", "elapsed"):
            jobs.add_column(column, justify="right" if column == "elapsed" else "left")
        now = time.monotonic()
        with self._lock:
            running = sorted(self._jobs.items())
        for key, job in running:
            jobs.add_row(Text(key), Text(job.label), Text(job.activity), Text(f"{now - job.started:.0f}s"))
        return Group(head, jobs) if running else head

    def __rich__(self) -> Any:
        return self.renderable()

    def __enter__(self) -> RichDisplay:
        from rich.live import Live

        self._live = Live(self, console=self.console, refresh_per_second=4, transient=True)
        self._live.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


def make_display(echo: Callable[[str], None] | None, quiet: bool) -> Display:
    """The live view when writing to a terminal and not quiet; plain lines otherwise.

    `echo=None` means stdout (the CLI); a given `echo` (tests, embedding programs) always gets plain lines.
    """
    if echo is None:
        if not quiet and sys.stdout.isatty():
            from rich.console import Console

            return RichDisplay(Console())
        echo = functools.partial(print, flush=True)
    return Display(echo, quiet)
