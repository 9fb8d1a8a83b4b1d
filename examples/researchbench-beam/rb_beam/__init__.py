"""An example third-party agent: beam search over the built-in operators (see docs/agents.md).

Policy: keep the `width` best scored nodes as the beam and improve them in turn; debug a fresh
failure once before moving on. The turn counter is the only state, saved as JSON with every node,
so a resumed run continues the rotation.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from researchbench.agents.kit import operators
from researchbench.agents.kit.prompts import PromptConfig
from researchbench.agents.kit.tree import debug_depth, is_leaf
from researchbench import OK, Action, Agent, AgentSpec, Node, NodeStore, TaskSpec, hookimpl

RESEARCHBENCH_AGENT_API = "1.0"  # the agent API this plugin was written for (docs/plugins.md, "Versions")


@dataclass
class BeamConfig(PromptConfig):
    name: str = "beam"
    width: int = 2  # nodes kept in the beam


class BeamPolicy:
    def __init__(self, cfg: BeamConfig):
        self.cfg = cfg
        self.turn = 0

    def beam(self, store: NodeStore) -> list[Node]:
        """The `width` best scored nodes, best first (the sort is stable: earlier nodes win ties)."""
        scored = [n for n in store if n.status == OK]
        return sorted(scored, key=lambda n: n.primary, reverse=store.metric.higher_is_better)[:self.cfg.width]

    def next_action(self, store: NodeStore, rng: random.Random) -> Action | None:
        newest = store.last(1)[0]
        if newest.is_buggy and debug_depth(newest, store) == 0 and is_leaf(store, newest.id):
            return Action("debug", (newest.id,), tag=f"debug_of:{newest.id}")  # Action.parents: ids
        beam = self.beam(store)
        if not beam:
            return None
        parent = beam[self.turn % len(beam)]
        self.turn += 1
        return Action("improve", (parent.id,), tag=f"beam:{self.turn}")

    def observe(self, node: Node, store: NodeStore) -> None:
        pass

    def state_dict(self) -> dict[str, Any]:
        return {"turn": self.turn}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.turn = state["turn"]


def build(cfg: BeamConfig, task: TaskSpec) -> Agent:
    return Agent(policy=BeamPolicy(cfg), operators=operators.bind(cfg, ("improve", "debug")),
                 analyze=operators.analyzer(cfg))


@hookimpl
def researchbench_register_agents(register) -> None:
    register(AgentSpec(name="beam", config_class=BeamConfig, build=build, uses_llm=True,
                       description="example: beam search over the built-in improve/debug operators"))
