"""What a run knows, as one value: the parts of a run (summary, final test, scheduler) get this, not the engine.

The engine (benchmark/run/engine.py) builds a RunState once and mutates it as the run goes on (counters,
usage, the stop reason, the final record); the parts read it and never reach back into the engine, so
the imports of benchmark/run/ point one way (tests/test_architecture.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from researchbench.benchmark.executors.base import Executor
from researchbench.benchmark.llm.accounting import Usage
from researchbench.benchmark.records.journal import BlobStore, Journal, NodeStore
from researchbench.benchmark.records.kinds import Final
from researchbench.benchmark.run.budget import Counters
from researchbench.benchmark.run.display import Display
from researchbench.benchmark.tasks.manifest import Budget, TaskSpec
from researchbench.benchmark.tasks.workspace import PreparedTask


@dataclass
class RunState:
    """One agent on one task: its identity, its stores and what it has used so far."""

    spec: TaskSpec
    agent: str  # the agent's registered name
    uses_llm: bool
    seed: int
    run_dir: Path
    budget: Budget  # the run's budget: the manifest's with the run's overrides
    prepared: PreparedTask
    blobs: BlobStore
    journal: Journal
    store: NodeStore
    display: Display
    provenance: dict[str, Any]
    executor: Executor | None = None  # set once the run starts (a finished run never builds one)
    counters: Counters = field(default_factory=Counters)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = ""
    final: Final | None = None  # the journal's final record, once the hidden test ran
    started: float = field(default_factory=time.monotonic)
    wall_before: float = 0.0  # wall seconds spent before this process resumed the run

    @property
    def sandbox_mode(self) -> str:
        return self.executor.sandbox_mode if self.executor is not None else "none"

    def wall_seconds(self) -> float:
        return self.wall_before + time.monotonic() - self.started
