"""What a run has spent, and whether another experiment may start.

Counters are checkpointed with every finished node. With K experiments in flight the step budget
counts the in-flight nodes as if each will run an experiment, so a run never launches more
experiments than it may spend; a node that ends without running one frees its slot again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmark.journal import Node
from benchmark.summary import plural
from benchmark.task import Budget


@dataclass
class Counters:
    """Budget counters and tallies, checkpointed with every node."""

    experiments: int = 0
    compute_s: float = 0.0
    wall_s: float = 0.0
    unexecuted_in_a_row: int = 0
    statuses: dict[str, int] = field(default_factory=dict)

    def count(self, node: Node) -> None:
        self.statuses[node.status] = self.statuses.get(node.status, 0) + 1
        if node.executed and node.step > 0:
            self.experiments += 1
        # experiment time plus the time of the agent's own commands (benchmark/commands.py)
        self.compute_s = round(self.compute_s + node.seconds + sum(t["seconds"] for t in node.tool_calls), 3)
        self.unexecuted_in_a_row = 0 if node.executed else self.unexecuted_in_a_row + 1


def launch_blocker(budget: Budget, counters: Counters, in_flight: int, max_unexecuted_in_a_row: int) -> str:
    """Why no new node may start now ("" when one may); with nothing in flight, why the search ends."""
    if counters.experiments + in_flight >= budget.steps:
        return f"used the budget of {plural(budget.steps, 'experiment')}"
    if counters.compute_s >= budget.compute_hours * 3600:
        return f"used the compute budget of {budget.compute_hours:g} h"
    if counters.unexecuted_in_a_row >= max_unexecuted_in_a_row:
        return f"{counters.unexecuted_in_a_row} steps in a row ran no experiment"
    return ""
