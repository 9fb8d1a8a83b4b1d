"""Greedy agent (AIDE/AIRA-greedy style, starting from the task's baseline).

Policy: if the newest node failed at run time and its debug chain is shorter than max_debug_depth,
debug it (with probability debug_prob); otherwise improve the best node so far. Stateless besides
the node store, so resume needs no policy state.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from researchbench.agents.kit import operators
from researchbench.agents.kit.prompts import PromptConfig
from researchbench.agents.kit.tree import ROOT, debug_depth
from researchbench import Action, Agent, AgentSpec, NodeStore, StatelessPolicy, TaskSpec, domain, hookimpl


@dataclass
class GreedyConfig(PromptConfig):
    name: str = "greedy"
    max_debug_depth: int = domain(3, ge=0)  # consecutive debug attempts on one failure chain
    debug_prob: float = domain(1.0, ge=0, le=1)  # chance to debug a fresh failure instead of improving the best node


class GreedyPolicy(StatelessPolicy):
    def __init__(self, cfg: GreedyConfig):
        self.cfg = cfg

    def next_action(self, store: NodeStore, rng: random.Random) -> Action | None:
        newest = store.last(1)[0]
        if newest.is_buggy and debug_depth(newest, store) < self.cfg.max_debug_depth \
                and rng.random() < self.cfg.debug_prob:
            return Action("debug", (newest.id,), tag=f"debug_of:{newest.id}")
        best = store.best() or store.get(ROOT)
        return Action("debug" if best.is_buggy else "improve", (best.id,))


def build(cfg: GreedyConfig, task: TaskSpec) -> Agent:
    return Agent(policy=GreedyPolicy(cfg), operators=operators.bind(cfg, ("improve", "debug")))


@hookimpl
def researchbench_register_agents(register: Callable[[AgentSpec], None]) -> None:
    register(AgentSpec(name="greedy", config_class=GreedyConfig, build=build, uses_llm=True,
                       description="LLM: improve the best node, debug fresh failures (bounded depth)"))
