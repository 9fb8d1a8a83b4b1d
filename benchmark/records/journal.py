"""The run's memory: an append-only, fsync'd JSONL journal of nodes plus a content-addressed blob store.

Each node is written twice: a `pending` record before its operator runs (write-ahead: the action and
the policy state after choosing it) and a `finished` record carrying the node and the run checkpoint
(policy state, budget counters, LLM usage) in one line, so a node and the state that follows it can
never be out of step. With several experiments in flight, finished records follow the order in which
results arrived, and every pending record without a finished one is a node to re-run on resume. An
`aborted` record says why a run stopped on an outage (benchmark/run/outage.py); the node it interrupted has
no finished record, so resume re-runs it like any other in-flight node. File
contents, logs, prompts and responses live in the blob store under their sha256, so storage grows
with what changed, not with the size of the workspace.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterator

from benchmark.common.safefs import write_text_atomic
from benchmark.tasks.manifest import Metric

# Node.status values
OK = "ok"  # executed and scored
BUGGY = "buggy"  # executed, but crashed, timed out or produced invalid predictions
EDIT_FAILED = "edit_failed"  # the proposed edit did not parse or apply: no experiment spent
NO_OP = "no_op"  # the edit changed nothing: no experiment spent
AGENT_FAILED = "agent_failed"  # the LLM call or the operator itself failed: no experiment spent
PENDING = "pending"  # claimed by the policy and in flight; only ever in NodeStore.pending()

ABORTED = "aborted"  # journal record kind: the run stopped on an outage {cause, fix, source, details, at}


@dataclass
class Node:
    id: str
    step: int
    operator: str
    parents: list[str] = field(default_factory=list)
    tag: str = ""
    hints: dict[str, Any] = field(default_factory=dict)
    plan: str = ""
    files: dict[str, str] = field(default_factory=dict)  # editable relpath -> blob digest (full snapshot)
    diff: str = ""  # blob digest of the unified diff against the first parent
    status: str = ""
    feedback: str = ""  # edit feedback or failure reason, shown to the agent next time
    executed: bool = False
    exit_code: int | None = None
    timed_out: bool = False
    seconds: float = 0.0  # experiment wall time (sandbox run + evaluator)
    cpu_seconds: float | None = None  # CPU time of the experiment's job, all its processes; None if unmeasured
    clock: str = "wall"  # what the step limit and the compute budget measured: "cpu" or "wall" (budget.py)
    peak_open_files: int | None = None  # most files the job's processes held open at once; None if unmeasured
    wall_limit_s: float | None = None  # the wall-clock limit it ran under (on the CPU clock: the backstop)
    # the step limit: {"kind": "cpu"|"wall", "seconds", "why"} (+ "backstop_s" on the CPU clock); {} if it did not run
    time_limit: dict[str, Any] = field(default_factory=dict)
    stdout: str = ""  # blob digests of the captured (capped) streams
    stderr: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    primary: float | None = None
    bug_reason: str = ""
    analysis: str = ""  # the agent's reading of the result (AIDE's review), when it has an analyzer
    analysis_error: str = ""  # why the analyzer gave no reading (crash, failed LLM call, budget)
    memo: dict[str, Any] = field(default_factory=dict)  # the operator's JSON for its policy (Proposal.memo)
    llm_calls: list[dict[str, Any]] = field(default_factory=list)  # prompts/responses as blob digests
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # commands the agent ran (benchmark/run/commands.py)
    transcript: str = ""  # blob digest of the operator's JSON turns (tool-using agents), else ""
    created_at: float = 0.0
    finished_at: float = 0.0

    @property
    def is_buggy(self) -> bool:
        return self.status == BUGGY

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Node:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})


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


BASELINE_ID = "0000"  # the node every run starts from: the task's own code, step 0


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
        if node.status == OK and node.primary is not None and (
            self._best is None or self.metric.better(node.primary, self._best.primary)
        ):
            self._best = node  # ties keep the earlier node

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
        """The best scored node by validation metric (earliest on ties), or None."""
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

    header: dict[str, Any] | None = None
    nodes: list[Node] = field(default_factory=list)
    checkpoint: dict[str, Any] | None = None  # from the last finished record
    # write-ahead records with neither a finished nor an abandoned record: the nodes in flight when the
    # run stopped, in launch order (at most `parallel` of them)
    pending: list[dict[str, Any]] = field(default_factory=list)
    policy: dict[str, Any] | None = None  # the latest policy state, from a pending or a finished record
    next_step: int = 0  # one past the highest step ever launched, so no node id is handed out twice
    final: dict[str, Any] | None = None  # the final-test record, when the run completed
    aborted: dict[str, Any] | None = None  # the latest `aborted` record, when the run stopped on an outage


class Journal:
    """Append-only JSONL; every record is one line, written and fsync'd before the run moves on."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def load(self) -> Loaded:
        loaded = Loaded()
        if not self.path.exists():
            return loaded
        data = self.path.read_bytes()
        good = data.rfind(b"\n") + 1  # a torn final line (killed mid-write) is dropped
        if good < len(data):
            with open(self.path, "r+b") as fh:
                fh.truncate(good)
                os.fsync(fh.fileno())
        in_flight: dict[str, dict[str, Any]] = {}
        for line in data[:good].splitlines():
            record = json.loads(line)
            kind = record["kind"]
            if kind == "header":
                loaded.header = record
            elif kind == "pending":
                in_flight[record["id"]] = record
                loaded.next_step = max(loaded.next_step, record["step"] + 1)
                if "policy" in record:
                    loaded.policy = record["policy"]
            elif kind == "finished":
                node = Node.from_dict(record["node"])
                loaded.nodes.append(node)
                loaded.checkpoint = record["checkpoint"]
                loaded.policy = record["checkpoint"]["policy"]
                loaded.next_step = max(loaded.next_step, node.step + 1)
                in_flight.pop(node.id, None)
            elif kind == "abandoned":  # stopped by a budget before it ran: nothing to re-run
                in_flight.pop(record["id"], None)
            elif kind == "final":
                loaded.final = record
            elif kind == ABORTED:
                loaded.aborted = record
        loaded.pending = sorted(in_flight.values(), key=lambda r: r["step"])
        return loaded

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":"), sort_keys=True, allow_nan=False).encode() + b"\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)


def write_json_atomic(path: Path, payload: Any) -> None:
    """Replace a JSON file in one step, so readers never see half a file."""
    write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n")


def now() -> float:
    return round(time.time(), 3)
