"""Greedy agent (AIDE/AIRA-greedy style, starting from the task's baseline).

Policy: if the newest node failed at run time and its debug chain is shorter than max_debug_depth,
debug it (with probability debug_prob); otherwise improve the best node so far. Stateless besides
the node store, so resume needs no policy state.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Callable

from agents import operators
from benchmark.agent_api import Action, Agent, AgentSpec, StatelessPolicy
from benchmark.journal import Node, NodeStore
from benchmark.plugins import hookimpl
from benchmark.task import TaskSpec


@dataclass
class GreedyConfig:
    name: str = "greedy"
    max_debug_depth: int = 3  # consecutive debug attempts on one failure chain
    debug_prob: float = 1.0  # chance to debug a fresh failure instead of improving the best node
    edit_format: str = "auto"  # "search_replace" | "whole_file" | "auto" (either, SEARCH/REPLACE preferred)
    memory_size: int = 8  # recent attempts shown in each prompt
    output_tail_chars: int = 3000  # of the parent's stdout and stderr, per stream


def debug_depth(node: Node, store: NodeStore) -> int:
    """How many debug steps led to this node along its first-parent chain."""
    depth = 0
    while node.operator == "debug" and node.parents:
        depth += 1
        node = store.get(node.parents[0])
    return depth


class GreedyPolicy(StatelessPolicy):
    def __init__(self, cfg: GreedyConfig):
        self.cfg = cfg

    def next_action(self, store: NodeStore, rng: random.Random) -> Action | None:
        newest = store.last(1)[0]
        if newest.is_buggy and debug_depth(newest, store) < self.cfg.max_debug_depth \
                and rng.random() < self.cfg.debug_prob:
            return Action("debug", (newest.id,), tag=f"debug_of:{newest.id}")
        best = store.best() or store.get("0000")
        return Action("debug" if best.is_buggy else "improve", (best.id,))


def build(cfg: GreedyConfig, task: TaskSpec) -> Agent:
    bind: Callable = lambda op: functools.partial(op, cfg=cfg)  # noqa: E731
    return Agent(policy=GreedyPolicy(cfg), operators={"improve": bind(operators.improve),
                                                      "debug": bind(operators.debug)})


@hookimpl
def researchbench_register_agents(register: Callable[[AgentSpec], None]) -> None:
    register(AgentSpec(name="greedy", config_class=GreedyConfig, build=build, uses_llm=True,
                       description="LLM: improve the best node, debug fresh failures (bounded depth)"))
