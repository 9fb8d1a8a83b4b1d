"""The journal's record kinds, typed and versioned: the one place a record becomes JSON and JSON a record.

A journal (journal.jsonl) is one JSON object per line, each with a `kind`. The engine writes them
(benchmark/records/journal.py's `Journal.append` takes only these types) and every reader — the engine
resuming, the scorer, the viewer, the exporters — parses lines with `parse`, so a field is named in one
place. `FORMAT` is written in the header; a reader accepts every format up to its own (a journal written
before the header carried one is format 0, the same records). docs/records.md documents each kind.

Kinds, in the order a run writes them:
  header        once, first: the config's digest and the run's provenance (seed, versions, environment)
  pending       write-ahead, before a node's operator runs: the action and the policy state after choosing it
  finished      a node and the checkpoint that follows it (policy state, budget counters, LLM usage)
  abandoned     a pending node stopped by a budget before it ran: nothing to re-run
  policy_crash  the agent's policy raised; the search stopped (the traceback, where it happened)
  aborted       the run stopped on an outage (cause, fix, source); the same command resumes it
  final         the hidden-test results of the baseline and the best node, once, at the end
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, Iterator, Union

from researchbench.benchmark.records.node import Node

FORMAT = 1  # bump when a record changes in a way a reader must know; add a reader branch for the old one


class BadRecord(ValueError):
    """A journal line that is not a record of a known kind with the fields that kind needs."""


def _known(cls: type, raw: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in raw.items() if k in names}


class _Flat:
    """A record kind whose JSON is its kind plus its fields, as they are."""

    KIND: ClassVar[str]

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.KIND, **asdict(self)}  # type: ignore[call-overload]

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Any:
        return cls(**_known(cls, raw))


@dataclass(frozen=True)
class Header:
    KIND: ClassVar[str] = "header"
    config_hash: str
    created_at: float
    provenance: dict[str, Any] = field(default_factory=dict)  # summary.py's provenance(): seed, versions, ...
    format: int = FORMAT

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.KIND, "format": self.format, "config_hash": self.config_hash,
                "created_at": self.created_at, **self.provenance}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Header:
        own = {"kind", "format", "config_hash", "created_at"}
        return cls(config_hash=str(raw["config_hash"]), created_at=float(raw.get("created_at") or 0.0),
                   provenance={k: v for k, v in raw.items() if k not in own}, format=int(raw.get("format", 0)))


@dataclass(frozen=True)
class Pending:
    KIND: ClassVar[str] = "pending"
    id: str
    step: int
    operator: str
    at: float
    parents: list[str] = field(default_factory=list)
    hints: dict[str, Any] = field(default_factory=dict)
    tag: str = ""
    policy: dict[str, Any] | None = None  # the policy's state after choosing this action (None: the baseline)

    def to_json(self) -> dict[str, Any]:
        out = {"kind": self.KIND, **asdict(self)}
        if self.policy is None:
            del out["policy"]  # the baseline's record carries no policy state
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Pending:
        record = cls(**_known(cls, raw))
        if not isinstance(record.id, str) or not isinstance(record.step, int):
            raise BadRecord("a pending record needs a string id and an integer step")
        return record


@dataclass(frozen=True)
class Checkpoint:
    """The run's state right after a node finished: what resume restores."""

    policy: dict[str, Any] | None  # the policy's state_dict (None after the baseline)
    counters: dict[str, Any]  # benchmark/run/budget.py's Counters, as a dict
    usage: dict[str, Any]  # benchmark/llm/accounting.py's Usage, as a dict


@dataclass(frozen=True)
class Finished:
    KIND: ClassVar[str] = "finished"
    node: Node
    checkpoint: Checkpoint

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.KIND, "node": self.node.to_dict(), "checkpoint": asdict(self.checkpoint)}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Finished:
        node, checkpoint = raw["node"], raw.get("checkpoint") or {}
        if not isinstance(node, dict) or not isinstance(node.get("id"), str) or not isinstance(checkpoint, dict):
            raise BadRecord("a finished record needs a node with a string id and a checkpoint object")
        parsed = Node.from_dict(node)
        if not isinstance(parsed.files, dict):
            raise BadRecord("a finished node's files must be an object")
        return cls(parsed, Checkpoint(policy=checkpoint.get("policy"), counters=checkpoint.get("counters") or {},
                                      usage=checkpoint.get("usage") or {}))


@dataclass(frozen=True)
class Abandoned(_Flat):
    KIND: ClassVar[str] = "abandoned"
    id: str
    reason: str
    at: float

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Abandoned:
        return cls(id=str(raw["id"]), reason=str(raw.get("reason", "")), at=float(raw.get("at") or 0.0))


@dataclass(frozen=True)
class PolicyCrash(_Flat):
    KIND: ClassVar[str] = "policy_crash"
    where: str  # next_action or observe
    traceback: str
    at: float


@dataclass(frozen=True)
class Aborted(_Flat):
    KIND: ClassVar[str] = "aborted"
    cause: str
    fix: str
    source: str
    at: float
    details: str = ""


@dataclass(frozen=True)
class Final(_Flat):
    KIND: ClassVar[str] = "final"
    stop_reason: str
    at: float
    # one hidden-test result each: {node, primary, metrics, error, seconds, cpu_seconds, clock, time_limit,
    # peak_open_files, stdout, stderr} (stdout/stderr as blob digests), or {node, primary: None, error}
    baseline: dict[str, Any] = field(default_factory=dict)
    best: dict[str, Any] = field(default_factory=dict)

    def score(self, which: str) -> float | None:
        """The hidden-test primary metric of 'baseline' or 'best', None when it has none."""
        value = getattr(self, which).get("primary")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Final:
        record = cls(**_known(cls, raw))
        if not isinstance(record.baseline, dict) or not isinstance(record.best, dict):
            raise BadRecord("a final record's baseline and best must be objects")
        return record


Record = Union[Header, Pending, Finished, Abandoned, PolicyCrash, Aborted, Final]
KINDS: dict[str, Any] = {cls.KIND: cls for cls in (Header, Pending, Finished, Abandoned, PolicyCrash, Aborted, Final)}


def parse(raw: Any) -> Record | None:
    """One decoded journal line as its record; None for a kind this version does not know (written by a
    newer one: skipped, so old readers keep working); BadRecord when a known kind lacks what it needs."""
    if not isinstance(raw, dict) or not isinstance(raw.get("kind"), str):
        raise BadRecord("not an object with a kind")
    cls = KINDS.get(raw["kind"])
    if cls is None:
        return None
    try:
        return cls.from_json(raw)
    except BadRecord:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise BadRecord(f"a {raw['kind']} record is malformed ({exc})") from None


def parse_lines(data: bytes, first_line: int = 1) -> Iterator[tuple[int, Record | None | BadRecord]]:
    """(line number, record) for each complete line of `data`; a line that is not a record comes back as
    its BadRecord, so each reader decides: the engine and the scorer refuse, the viewer skips with a note."""
    for number, line in enumerate(data.splitlines(), first_line):
        try:
            yield number, parse(json.loads(line))
        except BadRecord as exc:
            yield number, exc
        except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8
            yield number, BadRecord(f"not valid JSON ({exc})")


def dumps(record: Record) -> bytes:
    """The record as its journal line."""
    return json.dumps(record.to_json(), separators=(",", ":"), sort_keys=True, allow_nan=False).encode() + b"\n"
