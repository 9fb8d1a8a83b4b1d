"""A run's journal as the viewer reads it: tolerant, incremental, read-only.

Why not `Journal.load`: that one is for the engine resuming a run; it truncates a torn last line, which a
viewer must never do (and the line may just be half-written by the live run). This reader parses complete
lines only, skips a malformed one with a note instead of failing, reads a recording's `journal.jsonl.gz`, and
for a growing journal parses only the bytes added since the last poll (journals are append-only).
"""

from __future__ import annotations

import gzip
import io
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.records.journal import ABORTED
from benchmark.viewer.files import Results

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

    def add(self, record: Any, number: int) -> None:
        if not isinstance(record, dict):
            self.notes.append(f"journal line {number} is not a record (skipped)")
            return
        kind = record.get("kind")
        if kind == "header":
            self.header = record
        elif kind == "pending" and isinstance(record.get("id"), str):
            self.pending[record["id"]] = record
        elif kind == "finished" and isinstance(record.get("node"), dict) and isinstance(record["node"].get("id"), str):
            node_id = record["node"]["id"]
            self.finished[node_id] = record["node"]
            checkpoint = record.get("checkpoint")
            self.checkpoints[node_id] = checkpoint if isinstance(checkpoint, dict) else {}
            self.pending.pop(node_id, None)
        elif kind == "abandoned" and isinstance(record.get("id"), str):
            self.pending.pop(record["id"], None)
        elif kind == "final":
            self.final = record
        elif kind == ABORTED:
            self.aborted = record

    def parse(self, data: bytes, first_line: int) -> None:
        for number, line in enumerate(data.splitlines(), first_line):
            try:
                self.add(json.loads(line), number)
            except ValueError:
                self.notes.append(f"journal line {number} is not valid JSON (skipped)")


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

