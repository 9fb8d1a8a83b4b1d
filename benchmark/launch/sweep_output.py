"""What a sweep prints while its runs go on, so a person can follow several runs at once.

Joblib runs a sweep's jobs in worker processes that share one terminal, so their lines would
interleave with nothing saying which run wrote them. Inside a job of a sweep, everything the run
prints (stdout, stderr and Python logging) goes, complete line by complete line, to the job's own
log file (`<sweep dir>/<job number>/run.log`, where the Modal launcher writes its runs' logs too)
and, in the `lines` view, to the terminal behind a short run label such as `[aide/causality/s1]`.
In the `compact` view (chosen for sweeps of COMPACT_FROM jobs or more, or with `sweep_view=compact`)
the jobs print nothing to the terminal; the sweep's own process shows one line per run instead,
read from each run's summary.json (which a run keeps current): a live view on a terminal, plain
lines every PLAIN_EVERY_S seconds otherwise. Either way the sweep ends with its table.
"""

from __future__ import annotations

import io
import logging
import os
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator, Sequence

from omegaconf import DictConfig

from researchbench.benchmark.common.inert_text import inert
from researchbench.benchmark.records.summary import SummaryError, read_summary

VIEWS = ("auto", "lines", "compact")
COMPACT_FROM = 8  # `auto`: a sweep of this many jobs or more gets the compact view
VIEW_ENV = "RESEARCHBENCH_SWEEP_VIEW"  # the sweep's view, handed from the sweep's process to its jobs
LOG_NAME = "run.log"
PLAIN_EVERY_S = 30.0  # compact view without a terminal: how often the runs' lines are printed


def run_label(cfg: DictConfig) -> str:
    """The short name a run's lines carry in a sweep: agent/task/s<seed>."""
    return inert(f"{cfg.agent.name}/{cfg.task.name}/s{cfg.seed}", multiline=False)


def chosen_view(view: str, jobs: int) -> str:
    """`lines` or `compact` for a sweep of `jobs` jobs whose config says `view`."""
    if view == "auto":
        return "compact" if jobs >= COMPACT_FROM else "lines"
    return view


class LabelledLines(io.TextIOBase):
    """A text stream that writes each complete line to `log` as is and, when `terminal` is given, to the
    terminal behind `[label] `. A partial line waits for its newline (or for close). Thread-safe: a run's
    worker threads print too."""

    def __init__(self, label: str, log: IO[str], terminal: IO[str] | None):
        super().__init__()
        self.prefix, self.log, self.terminal = f"[{label}] ", log, terminal
        self._partial = ""
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False  # a run inside a sweep prints plain lines, never a live view of its own

    def write(self, text: str) -> int:
        with self._lock:
            *lines, self._partial = (self._partial + text).split("\n")
            self._emit(lines)
        return len(text)

    def _emit(self, lines: list[str]) -> None:
        if not lines:
            return
        self.log.write("".join(f"{line}\n" for line in lines))
        self.log.flush()
        if self.terminal is not None:
            self.terminal.write("".join(f"{self.prefix}{line}\n" for line in lines))
            self.terminal.flush()

    def close(self) -> None:
        with self._lock:
            if self._partial:
                self._emit([self._partial])
                self._partial = ""
        super().close()


@contextmanager
def labelled_output(label: str, log_path: Path, echo: bool) -> Iterator[None]:
    """Within the block, stdout, stderr and the logging handlers that wrote to them go to `log_path`
    (appended: a resumed run keeps its earlier output) and, if `echo`, to the terminal behind the label."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    saved = sys.stdout, sys.stderr
    with open(log_path, "a", encoding="utf-8", errors="replace") as log:
        streams = {id(old): LabelledLines(label, log, old if echo else None) for old in saved}
        handlers = [h for h in _stream_handlers() if id(h.stream) in streams]
        originals = [h.stream for h in handlers]
        sys.stdout, sys.stderr = (streams[id(old)] for old in saved)
        for handler in handlers:
            handler.setStream(streams[id(handler.stream)])
        try:
            yield
        finally:
            sys.stdout, sys.stderr = saved
            for handler, stream in zip(handlers, originals):
                handler.setStream(stream)
            for stream in streams.values():
                stream.close()


def _stream_handlers() -> list[logging.StreamHandler]:
    loggers = [logging.root, *(v for v in logging.root.manager.loggerDict.values() if isinstance(v, logging.Logger))]
    return [h for logger in loggers for h in logger.handlers
            if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)]


def run_line(label: str, run_dir: Path) -> str:
    """One run's state for the compact view, from the summary.json the run keeps current."""
    try:
        summary = read_summary(run_dir)
    except SummaryError:  # not written yet (the baseline is running), or not readable
        return inert(f"[{label}] waiting", multiline=False)
    used, best = summary.budget.used, summary.best.val
    spent = used.experiments if used is not None and used.experiments is not None else "?"
    best_text = f"{best:.4g}" if best is not None else "-"
    usd = (used.usd if used is not None else None) or 0.0
    state = (f"{summary.status}, experiments {spent}/{summary.budget.limits.experiments}, "
             f"best val {best_text}, ${usd:.2f}")
    return inert(f"[{label}] {state}", multiline=False)


class CompactView:
    """One line per run of the sweep, redrawn in place on a terminal or printed every PLAIN_EVERY_S
    seconds otherwise (and once more when the sweep ends)."""

    def __init__(self, runs: Sequence[tuple[str, Path]], out: IO[str] | None = None,
                 every_s: float = PLAIN_EVERY_S):
        self.runs, self.out, self.every_s = list(runs), out or sys.stdout, every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._live: Any = None

    def lines(self) -> list[str]:
        return [run_line(label, where) for label, where in self.runs]

    def __rich__(self) -> Any:
        from rich.text import Text

        return Text("\n".join(self.lines()))

    def __enter__(self) -> CompactView:
        if self.out.isatty():
            from rich.console import Console
            from rich.live import Live

            self._live = Live(self, console=Console(file=self.out), refresh_per_second=1, transient=False)
            self._live.start()
        else:
            self._thread = threading.Thread(target=self._plain, daemon=True, name="sweep-compact-view")
            self._thread.start()
        return self

    def _plain(self) -> None:
        while not self._stop.wait(self.every_s):
            self._print()

    def _print(self) -> None:
        self.out.write("".join(f"{line}\n" for line in self.lines()))
        self.out.flush()

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.stop()  # leaves the last state on screen
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._print()


@contextmanager
def sweep_view(configs: Sequence[DictConfig]) -> Iterator[None]:
    """Around the whole sweep, in the sweep's own process: decide the view, hand it to the jobs, and
    show the compact view while they run."""
    setting = configs[0].sweep_view
    view = chosen_view(str(getattr(setting, "value", setting)), len(configs))
    os.environ[VIEW_ENV] = view
    if view != "compact":
        yield
        return
    from researchbench.benchmark.launch.sweep_table import run_dir

    with CompactView([(run_label(cfg), run_dir(cfg)) for cfg in configs]):
        yield


@contextmanager
def job_output(cfg: DictConfig, job_dir: Path) -> Iterator[None]:
    """Around one job of a sweep: its lines labelled (or only logged, in the compact view)."""
    echo = os.environ.get(VIEW_ENV, "lines") != "compact"
    with labelled_output(run_label(cfg), job_dir / LOG_NAME, echo):
        yield
