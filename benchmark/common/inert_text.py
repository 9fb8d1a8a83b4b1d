"""Agent text made inert before it reaches a terminal, a log, an HTML page, a CSV cell or a prompt.

Why: whatever an agent produces is hostile input. That covers LLM replies, plans, a ReAct
`done_reason`, file names and what its jobs print. Printed raw, an ESC sequence can clear the screen,
hide lines, set the window title or plant a hyperlink. A NUL breaks report.html. A CSV cell that
starts with `=` runs as a formula when the table is opened in a spreadsheet. A job that prints
megabytes, or an evaluator that reports ten thousand metrics, would flood the journal and every
prompt. The rules live here, and every sink calls them:

- `inert`: terminal control is removed. That means whole ANSI escape sequences (CSI, OSC and string
  commands), the other C0/C1 controls, DEL and the bidirectional overrides ("Trojan Source"). `\\n`
  and `\\t` are kept only where the field may hold several lines.
- `job_output`: a job's stdout/stderr as the harness keeps it. It is capped in bytes (head and tail,
  the gap marked), a carriage return keeps only what a terminal would show last (progress bars), and
  the result goes through `inert`.
- `csv_safe`: the string cells of a table, made inert, and OWASP's CSV-injection rule applied (a
  leading `=`, `+`, `-`, `@`, tab or CR gets an apostrophe).
- `clean_metrics`: an evaluator's metrics reduced to safe names, finite values and a capped count.
- `InertLogFilter`: log records made inert (the message and any traceback).

Rich markup (`[bold]`, `[link=...]`) needs no escaping: the live view prints with `markup=False` and
builds `rich.text.Text` objects, so brackets stay literal text (tests/common/test_inert_text.py checks it).
`rich.markup.escape` would only add backslashes to the plain output.
"""

from __future__ import annotations

import logging
import math
import re
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import pandas as pd

# ESC-introduced sequences, dropped whole so no residue such as "[2J" is left behind:
# CSI (ESC [ params final), OSC/DCS/SOS/PM/APC strings (ended by BEL or ST; an unterminated one ends at
# the line's end, so it cannot swallow the rest of a job's output), and the two-character escapes
# (ESC + one byte, e.g. ESC c = reset).
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]?"
                      r"|\x1b[\]PX^_][^\x07\x1b\n]*(?:\x07|\x1b\\)?"
                      r"|\x9b[0-?]*[ -/]*[@-~]?"
                      r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
                      r"|\x1b[ -~]?")
# every other control: C0 but tab and newline, DEL, C1, the bidi embeddings/overrides/isolates and marks
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAKS = re.compile("\r\n|[\r\u2028\u2029]")
_BLANKS = re.compile(r"\s+")

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # OWASP: cells a spreadsheet would evaluate

JOB_OUTPUT_BYTES = 1 << 20  # what the harness keeps of one stream of one job (head and tail)

METRIC_NAME = re.compile(r"[A-Za-z0-9_.:/-]{1,64}")  # a name fit for a table header, a prompt and a key
MAX_METRICS = 256  # secondary metrics kept per evaluation (the primary always counts among them)


def inert(text: Any, multiline: bool = True) -> str:
    """`text` with terminal control removed. Newlines and tabs stay when `multiline`, otherwise every
    run of whitespace becomes one space (a progress line must not turn into two)."""
    text = _ESCAPES.sub("", "" if text is None else str(text))
    text = _CONTROLS.sub("", _LINE_BREAKS.sub("\n", text))
    return text if multiline else _BLANKS.sub(" ", text).strip()


def job_output(raw: bytes, cap: int = JOB_OUTPUT_BYTES) -> str:
    """One stream of a job as the harness keeps it: the first and last `cap`/2 bytes with the gap
    marked, each line as a terminal would leave it after its carriage returns, and made `inert`."""
    if len(raw) > cap:
        half = cap // 2
        raw = raw[:half] + f"\n[... {len(raw) - 2 * half} bytes of output cut ...]\n".encode() + raw[-half:]
    text = raw.decode(errors="replace").replace("\r\n", "\n")
    text = "\n".join(line.rstrip("\r").rsplit("\r", 1)[-1] for line in text.split("\n"))
    return inert(text)


def csv_cell(value: Any) -> Any:
    """A string made inert, with an apostrophe before a formula start; numbers and numeric strings
    ("-0.5" cannot be a formula) pass unchanged."""
    if not isinstance(value, str):
        return value
    value = inert(value)
    if value.startswith(FORMULA_START):
        try:
            float(value)
        except ValueError:
            return "'" + value
    return value


def csv_safe(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of `df` whose string cells, index labels and column names are safe to write as CSV."""
    return map_text(df, csv_cell)


def map_text(df: pd.DataFrame, fn: Callable[[Any], Any]) -> pd.DataFrame:
    """A copy of `df` with `fn` applied to every cell and label of a non-numeric column or index
    (object and string dtypes alike; `fn` gets the non-string values of mixed columns too)."""
    from pandas import MultiIndex
    from pandas.api.types import is_numeric_dtype

    df = df.copy()
    for column in df.columns:
        if not is_numeric_dtype(df[column]):
            df[column] = df[column].map(fn)
    for axis in ("index", "columns"):
        labels = getattr(df, axis)
        if isinstance(labels, MultiIndex):
            setattr(df, axis, labels.map(lambda key: tuple(fn(part) for part in key)))
        elif not is_numeric_dtype(labels):
            setattr(df, axis, labels.map(fn))
    return df


def clean_metrics(raw: dict[Any, Any], primary: str) -> tuple[dict[str, float], str]:
    """An evaluator's metrics as the harness records them, and a note on what was left out ("" if nothing).

    Kept: names matching METRIC_NAME whose values are finite numbers (not bools), at most MAX_METRICS,
    the primary first so the cap never drops it. What is left out is described in short, inert words.
    """
    kept: dict[str, float] = {}
    non_finite: list[str] = []
    bad_names = not_numbers = over_cap = 0
    for name, value in sorted(raw.items(), key=lambda kv: kv[0] != primary):
        if not isinstance(name, str) or not METRIC_NAME.fullmatch(name):
            bad_names += 1
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            not_numbers += 1
        elif not math.isfinite(number := _as_float(value)):
            non_finite.append(f"{name}={number}")
        elif len(kept) >= MAX_METRICS:
            over_cap += 1
        else:
            kept[name] = number
    notes = []
    if non_finite:
        shown = ", ".join(sorted(non_finite)[:10]) + (f" and {len(non_finite) - 10} more" if len(non_finite) > 10 else "")
        notes.append(f"the evaluator gave non-finite secondary metrics, left out of this node's metrics: {shown}")
    if not_numbers:
        notes.append(f"left out {not_numbers} metric(s) whose values are not numbers")
    if bad_names:
        notes.append(f"left out {bad_names} metric(s) whose names are not 1-64 of the characters A-Z a-z 0-9 _ . : / -")
    if over_cap:
        notes.append(f"left out {over_cap} metric(s) over the cap of {MAX_METRICS} per evaluation")
    return kept, "; ".join(notes)


def _as_float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # a JSON integer beyond the float range
        return math.inf


class InertLogFilter(logging.Filter):
    """Makes each record inert before a handler formats it: its message, and a traceback's text
    (set as `exc_text`, which formatters print instead of formatting the exception again)."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = inert(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = inert(self._formatter.formatException(record.exc_info))
        return True


def install_log_filter(logger: logging.Logger | None = None) -> None:
    """Put one InertLogFilter on every handler of `logger` (the root logger by default)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, InertLogFilter) for f in handler.filters):
            handler.addFilter(InertLogFilter())
