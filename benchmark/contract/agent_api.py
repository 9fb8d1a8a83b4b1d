"""What an agent is: a search policy that picks actions, and operators that turn actions into files.

One engine step = one action = one node, so every step is a checkpoint. Policies keep their own small
JSON state (agendas, counters); anything derivable from the node store is derived, not stored.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from researchbench.benchmark.executors.base import charged_seconds

if TYPE_CHECKING:
    from researchbench.benchmark.llm.accounting import LLMCall
    from researchbench.benchmark.llm.client import LLMClient
    from researchbench.benchmark.records.journal import BlobStore, Node, NodeStore
    from researchbench.benchmark.tasks.manifest import Budget, TaskSpec

# The version of what a plugin sees (these types, the hooks, OpContext's fields), "MAJOR.MINOR": a minor
# bump only adds; a major bump removes or changes meaning. A plugin declares the version it was written
# for as RESEARCHBENCH_AGENT_API = "1.0" in its entry-point module (docs/plugins.md).
AGENT_API_VERSION = "1.0"


@dataclass(frozen=True)
class Action:
    operator: str  # key into Agent.operators, e.g. "improve", "debug", "tune"
    parents: tuple[str, ...] = ()  # node ids the operator works from
    hints: dict[str, Any] = field(default_factory=dict)  # JSON-able operator arguments
    tag: str = ""  # policy bookkeeping shown in logs, e.g. "debug_of:0004"


@dataclass
class Proposal:
    """What an operator returns: the new editable files, or why there are none."""

    files: dict[str, str]  # full contents of every editable file after the edit
    plan: str = ""
    edit_ok: bool = True  # parsed and applied; False = a failed edit (recorded, no experiment spent)
    changed: bool = True  # False = a no-op edit (recorded, no experiment spent)
    feedback: str = ""  # why the edit failed or was a no-op, for the next prompt
    llm_calls: list[LLMCall] = field(default_factory=list)
    # JSON the operator hands back to its policy (AI Scientist's generated ideas, its experiment notes),
    # stored on the node as `memo`, so the policy reads it in observe() and a resumed run rebuilds it
    memo: dict[str, Any] = field(default_factory=dict)
    transcript: list[dict[str, Any]] = field(default_factory=list)  # JSON turns (a tool-using agent's
    # conversation), stored as a blob on the node (node.transcript) for the agent to rebuild its state


@dataclass
class CommandResult:
    """What the agent sees of one shell command it ran between experiments (benchmark/run/commands.py runs it)."""

    command: str
    exit_code: int | None
    timed_out: bool
    seconds: float
    stdout: str
    stderr: str
    refused: str = ""  # why the harness did not run it (compute budget spent, bad files); nothing ran
    cpu_seconds: float | None = None  # CPU time of all its processes, where the executor measures it
    clock: str = "wall"  # what its time limit measured (JobResult.clock)
    peak_open_files: int | None = None  # most files its processes held at once, where the executor measures it

    @property
    def charged_seconds(self) -> float:
        """What it costs the compute budget."""
        return charged_seconds(self.seconds, self.cpu_seconds, self.clock)

    def to_record(self, blobs: BlobStore) -> dict[str, Any]:
        return {"kind": "command", "command": self.command[:2000], "exit_code": self.exit_code,
                "timed_out": self.timed_out, "seconds": self.seconds, "cpu_seconds": self.cpu_seconds,
                "clock": self.clock, "peak_open_files": self.peak_open_files, "refused": self.refused,
                "stdout": blobs.put(self.stdout), "stderr": blobs.put(self.stderr)}


@dataclass
class OpContext:
    task: TaskSpec
    store: NodeStore  # read-only use: nodes, files, best
    llm: LLMClient | None  # None for agents that declare uses_llm=False
    rng: random.Random  # derived from (seed, step): deterministic on resume
    steps_left: int
    # this run's budget (the manifest's with command-line overrides): the only budget a prompt may state,
    # so it has no default that could fall back to the manifest's
    budget: Budget
    public_dir: Path | None = None  # the task's public data, read-only (for data previews)
    data_path: str = ""  # the same dir as the agent's commands and experiments see it (e.g. /job/data)
    compute_left_s: float = float("inf")  # compute budget left when the node started
    # python and the task's requirements as installed for jobs, taken once at run start
    # (benchmark.tasks.environment), so prompts name the APIs the experiment will really have
    libraries: dict[str, str] = field(default_factory=dict)
    # run_command(files, shell_command, timeout_s) -> CommandResult: a shell command in
    # the val sandbox over `files`, no evaluator; its seconds are charged to compute and recorded on the
    # node by the harness (benchmark/run/commands.py). Set by the worker for each node.
    run_command: Callable[[dict[str, str], str, float], CommandResult] | None = None


@dataclass
class Analysis:
    """What an analyzer returns for an executed node: a short reading of its result (AIDE's review)."""

    text: str
    llm_calls: list[LLMCall] = field(default_factory=list)


Operator = Callable[[OpContext, "list[Node]", Action], Proposal]
Analyzer = Callable[[OpContext, "Node"], Analysis]


class Policy(Protocol):
    def next_action(self, store: NodeStore, rng: random.Random) -> Action | None:
        """The next action, or None when the policy has nothing left to try.

        With several experiments in flight, `store.pending()` lists the claimed nodes (operator and
        parents set, not yet finished): a policy must not hand out work another claim already covers.
        """

    def observe(self, node: Node, store: NodeStore) -> None:
        """Update state after a node finished (debug agendas, visit counts, ...)."""

    def state_dict(self) -> dict[str, Any]:
        """JSON state checkpointed after every node."""

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class StatelessPolicy:
    """Base for policies whose choices follow from the node store alone: nothing to observe or save."""

    def observe(self, node: Node, store: NodeStore) -> None:
        pass

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


@dataclass
class Agent:
    policy: Policy
    operators: dict[str, Operator]
    analyze: Analyzer | None = None  # called once per executed node; costs no experiment


@dataclass(frozen=True)
class AgentSpec:
    """How a plugin registers an agent: `register(AgentSpec(...))` inside researchbench_register_agents."""

    name: str
    config_class: type  # a dataclass with a `name: str` field; becomes the Hydra option agent=<name>
    build: Callable[[Any, TaskSpec], Agent]  # (validated config object, task) -> Agent
    uses_llm: bool = True
    description: str = ""
