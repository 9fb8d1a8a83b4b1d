"""The run's memory: an append-only, fsync'd JSONL journal of typed records plus a content-addressed blob store.

Each node is written twice: a `pending` record before its operator runs (write-ahead: the action and
the policy state after choosing it) and a `finished` record carrying the node and the run checkpoint
(policy state, budget counters, LLM usage) in one line, so a node and the state that follows it can
never be out of step. With several experiments in flight, finished records follow the order in which
results arrived, and every pending record without a finished one is a node to re-run on resume. The
record kinds and their fields live in benchmark/records/kinds.py (docs/records.md); this module writes
them (`Journal.append`) and reads them (`read_records`, `Journal.load`). File contents, logs, prompts and
responses live in the blob store under their sha256, so storage grows with what changed, not with the
size of the workspace.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from researchbench.benchmark.common.safefs import write_text_atomic
from researchbench.benchmark.records.kinds import (Aborted, Abandoned, BadRecord, Checkpoint, Final, Finished, Header,
                                                   Pending, Record, dumps, parse_lines)
from researchbench.benchmark.records.node import (AGENT_FAILED, BASELINE_ID, BUGGY, EDIT_FAILED, NO_OP, OK, PENDING,  # noqa: F401
                                    Node)
from researchbench.benchmark.tasks.manifest import Metric

ABORTED = Aborted.KIND  # the record kind's name, kept for code written against 0.1 (kinds.Aborted is the record)


class BlobStore:
    """Content-addressed files: put(bytes) -> sha256 hex; identical content is stored once."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def _path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest[2:]

    def put(self, data: bytes | str) -> str:
        if isinstance(data, str):
            data = data.encode()
        digest = hashlib.sha256(data).hexdigest()
        path = self._path(digest)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            # unique per process and thread: two workers may store the same content at once
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        return digest

    def get(self, digest: str) -> bytes:
        return self._path(digest).read_bytes()

    def text(self, digest: str) -> str:
        return self.get(digest).decode(errors="replace") if digest else ""


class NodeStore:
    """Finished nodes in the order they finished, with the lookups policies need kept cheap (best is O(1)).

    Only the engine's main thread changes it; operators in worker threads read it meanwhile, so
    iteration goes over a snapshot.
    """

    def __init__(self, blobs: BlobStore, metric: Metric):
        self.blobs = blobs
        self.metric = metric
        self._nodes: dict[str, Node] = {}
        self._children: dict[str, list[str]] = {}
        self._best: Node | None = None
        self._file_cache: dict[str, str] = {}
        self._pending: dict[str, Node] = {}

    def claim(self, node: Node) -> None:
        """Mark a node as in flight, so policies asked meanwhile see what is already being tried."""
        node.status = PENDING
        self._pending[node.id] = node

    def unclaim(self, node: Node) -> None:
        """Drop a claimed node that will never finish (abandoned before it ran)."""
        self._pending.pop(node.id, None)

    def pending(self) -> list[Node]:
        """Claimed nodes not yet finished, oldest first."""
        return list(self._pending.values())

    def add(self, node: Node) -> None:
        self._pending.pop(node.id, None)
        self._nodes[node.id] = node
        for parent in node.parents:
            self._children.setdefault(parent, []).append(node.id)
        best = self._best
        if node.status == OK and node.primary is not None and (
            best is None or best.primary is None or self.metric.outranks(node, best)
        ):
            self._best = node  # a tie the task's tie-breaks leave keeps the earlier node

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, node_id: str) -> bool:
        return node_id in self._nodes

    def __iter__(self) -> Iterator[Node]:
        return iter(list(self._nodes.values()))

    def get(self, node_id: str) -> Node:
        return self._nodes[node_id]

    def baseline(self) -> Node | None:
        """The run's baseline node, once it has finished."""
        return self._nodes.get(BASELINE_ID)

    def children(self, node_id: str) -> list[Node]:
        return [self._nodes[c] for c in self._children.get(node_id, ())]

    def best(self) -> Node | None:
        """The best scored node by validation metric, then the task's tie-breaks, then the earliest; or None."""
        return self._best

    def last(self, count: int) -> list[Node]:
        """The most recent nodes, oldest first (bounded memory for prompts)."""
        nodes = list(self._nodes.values())
        return nodes[-count:] if count else []

    def files(self, node: Node) -> dict[str, str]:
        """The node's editable files as text."""
        out = {}
        for rel, digest in node.files.items():
            if digest not in self._file_cache:
                self._file_cache[digest] = self.blobs.text(digest)
            out[rel] = self._file_cache[digest]
        return out


@dataclass
class Loaded:
    """What a journal holds when a run (re)starts."""

    header: Header | None = None
    nodes: list[Node] = field(default_factory=list)
    checkpoint: Checkpoint | None = None  # from the last finished record
    # write-ahead records with neither a finished nor an abandoned record: the nodes in flight when the
    # run stopped, in launch order (at most `parallel` of them)
    pending: list[Pending] = field(default_factory=list)
    policy: dict[str, Any] | None = None  # the latest policy state, from a pending or a finished record
    next_step: int = 0  # one past the highest step ever launched, so no node id is handed out twice
    final: Final | None = None  # the final-test record, when the run completed
    aborted: Aborted | None = None  # the latest `aborted` record, when the run stopped on an outage


def read_records(path: Path) -> tuple[list[Record], bool]:
    """Every record of a journal (journal.jsonl, or a recording's journal.jsonl.gz) and whether its last line
    was torn (a run killed mid-write: that line is left out). Raises BadRecord naming the line of a record
    that does not parse; kinds newer than this version are skipped. Never writes: readers other than the
    engine resuming (`Journal.load`) must leave a live journal alone."""
    raw = Path(path).read_bytes()
    data = gzip.decompress(raw) if Path(path).suffix == ".gz" else raw
    good = data.rfind(b"\n") + 1
    records = []
    for number, record in parse_lines(data[:good]):
        if isinstance(record, BadRecord):
            raise BadRecord(f"journal line {number} is not a valid record ({record})")
        if record is not None:
            records.append(record)
    return records, good < len(data)


class Journal:
    """Append-only JSONL; every record is one line, written and fsync'd before the run moves on."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def load(self) -> Loaded:
        """The run's state for a resume; a torn final line (killed mid-write) is cut off the file."""
        loaded = Loaded()
        if not self.path.exists():
            return loaded
        records, torn = read_records(self.path)
        if torn:
            data = self.path.read_bytes()
            with open(self.path, "r+b") as fh:
                fh.truncate(data.rfind(b"\n") + 1)
                os.fsync(fh.fileno())
        in_flight: dict[str, Pending] = {}
        for record in records:
            if isinstance(record, Header):
                loaded.header = record
            elif isinstance(record, Pending):
                in_flight[record.id] = record
                loaded.next_step = max(loaded.next_step, record.step + 1)
                if record.policy is not None:
                    loaded.policy = record.policy
            elif isinstance(record, Finished):
                loaded.nodes.append(record.node)
                loaded.checkpoint = record.checkpoint
                loaded.policy = record.checkpoint.policy
                loaded.next_step = max(loaded.next_step, record.node.step + 1)
                in_flight.pop(record.node.id, None)
            elif isinstance(record, Abandoned):  # stopped by a budget before it ran: nothing to re-run
                in_flight.pop(record.id, None)
            elif isinstance(record, Final):
                loaded.final = record
            elif isinstance(record, Aborted):
                loaded.aborted = record
        loaded.pending = sorted(in_flight.values(), key=lambda r: r.step)
        return loaded

    def append(self, record: Record) -> None:
        """Write one record as one line and fsync it; the only way records reach a journal."""
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, dumps(record))
            os.fsync(fd)
        finally:
            os.close(fd)


def write_json_atomic(path: Path, payload: Any) -> None:
    """Replace a JSON file in one step, so readers never see half a file."""
    write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n")


def now() -> float:
    return round(time.time(), 3)
