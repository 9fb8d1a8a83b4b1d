"""A scripted policy on the real engine (the toy task): the parallel and GPU tests drive whole runs with it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Callable

from conftest import compose, journal_records

from researchbench.benchmark.contract.agent_api import Action, Agent, AgentSpec, Proposal
from researchbench.benchmark.records.journal import Node, NodeStore


@dataclasses.dataclass
class ProbeConfig:
    name: str = "probe"


class TreePolicy:
    """Expands any node with fewer than two children that no in-flight node already expands.

    It checks the engine's side of the contract on every call: `store.pending()` holds exactly the
    actions handed out and not yet observed, so the engine claimed each before asking again.
    """

    def __init__(self) -> None:
        self.outstanding: list[str] = []  # parents of actions handed out, not yet observed
        self.max_in_flight = 0
        self.chosen: list[str] = []

    def next_action(self, store: NodeStore, rng) -> Action | None:
        pending = store.pending()
        assert sorted(p for n in pending for p in n.parents) == sorted(self.outstanding), "unclaimed work in flight"
        busy = {p for n in pending for p in n.parents}
        free = sorted(n.id for n in store if len(store.children(n.id)) < 2 and n.id not in busy)
        if not free:
            return None
        parent = rng.choice(free)
        self.outstanding.append(parent)
        self.max_in_flight = max(self.max_in_flight, len(pending) + 1)
        self.chosen.append(parent)
        return Action("write", (parent,))

    def observe(self, node: Node, store: NodeStore) -> None:
        self.outstanding.remove(node.parents[0])

    def state_dict(self) -> dict[str, Any]:
        return {"outstanding": self.outstanding}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.outstanding = list(state["outstanding"])


def write_step(ctx, parents: list[Node], action: Action) -> Proposal:
    """A new params.json per step (so every node runs an experiment)."""
    files = ctx.store.files(parents[0])
    params = {**json.loads(files["params.json"]), "slope": round(ctx.rng.uniform(0, 4), 6)}
    return Proposal(files={**files, "params.json": json.dumps(params)}, plan=f"slope {params['slope']}")


def run_agent(tmp_path: Path, agent: Callable[[], Agent], *overrides: str, display=None):
    """Run a test agent registered next to the built-ins; returns (summary, output lines, journal records)."""
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.run.config import register_configs
    from researchbench.benchmark.run.engine import run_benchmark

    base = get_registry()
    spec = AgentSpec(name="probe", config_class=ProbeConfig, build=lambda cfg, task: agent(), uses_llm=False)
    registry = dataclasses.replace(base, agents={**base.agents, "probe": spec})
    register_configs(registry)
    cfg = compose("agent=probe", "task=toy", f"results_dir={tmp_path}", *overrides)
    lines: list[str] = []
    summary = run_benchmark(cfg, registry, echo=lines.append, display=display)
    return summary, lines, journal_records(Path(summary["run_dir"]))
