"""A run's journal as the viewer reads it: tolerant, incremental, read-only.

Why not `Journal.load`: that one is for the engine resuming a run; it truncates a torn last line, which a
viewer must never do (and the line may just be half-written by the live run). This reader parses complete
lines only, skips a malformed one with a note instead of failing, reads a recording's `journal.jsonl.gz`, and
for a growing journal parses only the bytes added since the last poll (journals are append-only).
"""

from __future__ import annotations

import gzip
import io
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from researchbench.benchmark.records.kinds import (Aborted, Abandoned, BadRecord, Final, Finished, Header, Pending,
                                                   Record, parse_lines)
from researchbench.benchmark.viewer.files import Results

JOURNAL, RECORDED_JOURNAL = "journal.jsonl", "journal.jsonl.gz"
GZ_CAP = 64 << 20  # a recording's journal, decompressed


@dataclass
class JournalView:
    """What the journal says so far."""

    header: dict[str, Any] | None = None
    finished: dict[str, dict[str, Any]] = field(default_factory=dict)  # node id -> node dict, in finish order
    checkpoints: dict[str, dict[str, Any]] = field(default_factory=dict)  # node id -> the checkpoint after it
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)  # in flight: write-ahead records
    final: dict[str, Any] | None = None
    aborted: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    offset: int = 0  # bytes of the file parsed (complete lines only)
    identity: tuple[int, int] = (0, 0)  # (inode, device) of the file parsed

    def add(self, record: Record) -> None:
        """Fold one parsed record in; the page works on their JSON form, the one it serves."""
        if isinstance(record, Header):
            self.header = record.to_json()
        elif isinstance(record, Pending):
            self.pending[record.id] = record.to_json()
        elif isinstance(record, Finished):
            self.finished[record.node.id] = record.node.to_dict()
            self.checkpoints[record.node.id] = asdict(record.checkpoint)
            self.pending.pop(record.node.id, None)
        elif isinstance(record, Abandoned):
            self.pending.pop(record.id, None)
        elif isinstance(record, Final):
            self.final = record.to_json()
        elif isinstance(record, Aborted):
            self.aborted = record.to_json()

    def parse(self, data: bytes, first_line: int) -> None:
        """Complete lines only, through the journal's one parser (benchmark/records/kinds.py); a line that is
        not a record is skipped with a note, never fatal: the page shows what it can."""
        for number, record in parse_lines(data, first_line):
            if isinstance(record, BadRecord):
                self.notes.append(f"journal line {number} is not a valid record: {record} (skipped)")
            elif record is not None:
                self.add(record)


class JournalCache:
    """One JournalView per run folder, brought up to date on each read by parsing only what was appended."""

    def __init__(self, results: Results):
        self.results = results
        self._views: dict[Path, tuple[JournalView, int]] = {}  # run dir -> (view, lines parsed)
        self._lock = threading.Lock()

    def read(self, run_dir: Path) -> JournalView:
        with self._lock:
            return self._read(run_dir)

    def _read(self, run_dir: Path) -> JournalView:
        plain, packed = run_dir / JOURNAL, run_dir / RECORDED_JOURNAL
        st = self.results.stat(plain)
        if st is None:
            return self._recorded(packed)
        view, lines = self._views.get(run_dir, (JournalView(), 0))
        if (st.st_ino, st.st_dev) != view.identity or st.st_size < view.offset:
            view, lines = JournalView(identity=(st.st_ino, st.st_dev)), 0  # replaced or rewritten: start over
        if st.st_size > view.offset:
            data = self.results.read(plain, offset=view.offset) or b""
            complete = data[:data.rfind(b"\n") + 1]  # a line still being written waits for the next poll
            view.parse(complete, lines + 1)
            lines += complete.count(b"\n")
            view.offset += len(complete)
        self._views[run_dir] = (view, lines)
        return view

    def _recorded(self, packed: Path) -> JournalView:
        view = JournalView()
        raw = self.results.read(packed)
        if raw is None:
            view.notes.append("no journal.jsonl")
            return view
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
                data = fh.read(GZ_CAP)
        except (OSError, EOFError):
            view.notes.append("journal.jsonl.gz is not a readable gzip file")
            return view
        view.parse(data[:data.rfind(b"\n") + 1], 1)
        return view

