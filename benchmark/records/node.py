"""A node: one step of a run (an action, its edit, its experiment and result), as the journal records it.

Node ids are the step number in four digits; the baseline, the task's own code, is step 0 (`BASELINE_ID`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

# Node.status values
OK = "ok"  # executed and scored
BUGGY = "buggy"  # executed, but crashed, timed out or produced invalid predictions
EDIT_FAILED = "edit_failed"  # the proposed edit did not parse or apply: no experiment spent
NO_OP = "no_op"  # the edit changed nothing: no experiment spent
AGENT_FAILED = "agent_failed"  # the LLM call or the operator itself failed: no experiment spent
PENDING = "pending"  # claimed by the policy and in flight; only ever in NodeStore.pending()

BASELINE_ID = "0000"  # the node every run starts from: the task's own code, step 0


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
