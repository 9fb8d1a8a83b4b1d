"""What a run has spent, and whether another experiment may start.

Counters are checkpointed with every finished node. With K experiments in flight the step budget
counts the in-flight nodes as if each will run an experiment, so a run never launches more
experiments than it may spend; a node that ends without running one frees its slot again.

The compute budget counts what the step limit counts: CPU seconds of the jobs (experiments and the
agent's commands; the evaluator's are not charged) where the executor limited CPU time, wall
seconds where it limited wall time (GPU tasks, Modal), so machine load cannot spend an agent's hours.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from researchbench.benchmark.executors.base import CPU, WALL, charged_seconds
from researchbench.benchmark.records.journal import Node
from researchbench.benchmark.run.display import plural
from researchbench.benchmark.tasks.manifest import Budget


@dataclass
class Counters:
    """Budget counters and tallies, checkpointed with every node."""

    experiments: int = 0
    compute_s: float = 0.0
    wall_s: float = 0.0
    unexecuted_in_a_row: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    clock: str = ""  # what compute_s counts: "cpu", "wall", "mixed" (a run resumed elsewhere), "" before any job

    def count(self, node: Node) -> None:
        self.statuses[node.status] = self.statuses.get(node.status, 0) + 1
        if node.executed and node.step > 0:
            self.experiments += 1
        # experiment time plus the time of the agent's own commands (benchmark/run/commands.py)
        jobs = [(node.seconds, node.cpu_seconds, node.clock)] if node.executed else []
        jobs += [(t["seconds"], t.get("cpu_seconds"), t.get("clock", WALL)) for t in node.tool_calls if not t.get("refused")]
        for seconds, cpu_seconds, clock in jobs:
            self.compute_s = round(self.compute_s + charged_seconds(seconds, cpu_seconds, clock), 3)
            self.clock = clock if self.clock in ("", clock) else "mixed"
        self.unexecuted_in_a_row = 0 if node.executed else self.unexecuted_in_a_row + 1


def launch_blocker(budget: Budget, counters: Counters, in_flight: int, max_unexecuted_in_a_row: int) -> str:
    """Why no new node may start now ("" when one may); with nothing in flight, why the search ends."""
    if counters.experiments + in_flight >= budget.steps:
        return f"used the budget of {plural(budget.steps, 'experiment')}"
    if counters.compute_s >= budget.compute_hours * 3600:
        return f"used the compute budget of {budget.compute_hours:g} {'CPU ' if counters.clock == CPU else ''}h"
    if counters.unexecuted_in_a_row >= max_unexecuted_in_a_row:
        return f"{counters.unexecuted_in_a_row} steps in a row ran no experiment"
    return ""
