"""AIRA-dojo's MCTS over solution nodes, rooted at the task's baseline (node 0000).

Selection descends from the root through the child with the highest UCT,
    UCT(c | p) = norm(Q(c)) + uct_c * sqrt(ln n(p) / n(c)),   Q(c) = W(c) / n(c),
with Q min-max normalised over every value backed up so far (flipped when lower is better), until a
node with no visited child: the leaf. The leaf gets `num_children` expansions (drafts at the root,
improvements elsewhere; unless set, the run's budget // 4 in [1, `max_children`], agents/kit/budget_rules.py,
so 8 experiments expand 2 at a time, not 3). A scored child backs its metric up along its whole path
(n += 1, W += v). A buggy child starts a debug chain of up to `max_debug_depth` debug steps; the chain's value is
backed up, through every buggy node in it, only when a step fixes it. Unfixed failures keep n = 0
and are never selected (AIRA scores them -1e8). Every expansion is expanded once per selection; it
is not FML-bench's port, which expanded the root once (two drafts per run).

Our deviations, each for a reason: a node whose children are all unvisited is itself the leaf
(AIRA would descend into a failed child and improve buggy code); a leaf with a claim in flight or a
queued expansion is skipped, so parallel workers never expand the same leaf twice; when every leaf
is claimed the best node is improved. Visit counts, values, the normaliser range and the agenda of
queued actions are JSON state, checkpointed with every node.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Callable, Optional

from researchbench.agents.kit import operators
from researchbench.agents.kit.budget_rules import exploration_width
from researchbench.agents.kit.prompts import PromptConfig
from researchbench.agents.kit.tree import (ROOT, action_from_json, action_to_json, debug_depth, path_to_root,
                                           pending_children, retry_debug)
from researchbench import OK, Action, Agent, AgentSpec, Node, NodeStore, domain, hookimpl
from researchbench.benchmark.tasks.manifest import Metric, TaskSpec


@dataclass
class MctsConfig(PromptConfig):
    name: str = "mcts"
    # Shipped defaults sit between AIRA (uct_c 0.25, num_children 5, max_debug_depth 20, for 24 h runs
    # of hundreds of nodes) and FML-bench's port (1.41 / 2 / 3): our budgets are 10-50 experiments, so
    # 5 children per leaf would spend half a run on the root's drafts and a 20-step debug chain could
    # eat the whole budget. 3 children leave room for two or three levels; AIRA's small uct_c keeps
    # the search exploitative, which suits few experiments; 3 debug steps match AIDE and FML-bench.
    # Below 12 experiments even 3 is too wide (3 drafts + 3 improvements of one = 6 of 8 spent before a
    # second level), so the width follows the budget unless set.
    uct_c: float = domain(0.25, ge=0)
    num_children: Optional[int] = domain(None, ge=1)  # None: the run's budget // 4, in [1, max_children]
    max_children: int = domain(3, ge=1)
    max_debug_depth: int = domain(3, ge=0)


class MctsPolicy:
    def __init__(self, cfg: MctsConfig, metric: Metric, budget_steps: int):
        self.cfg, self.metric = cfg, metric
        self.num_children = exploration_width(cfg.num_children, budget_steps, cfg.max_children)
        self.visits: dict[str, int] = {}
        self.value: dict[str, float] = {}
        self.gmin: float | None = None
        self.gmax: float | None = None
        self.agenda: list[Action] = []

    # -- statistics ------------------------------------------------------------------------------
    def n(self, node_id: str) -> int:
        return self.visits.get(node_id, 0)

    def normalized_q(self, node_id: str) -> float:
        q = self.value[node_id] / self.n(node_id)
        if self.gmin is None or self.gmax is None or self.gmax == self.gmin:
            return 0.5
        scaled = (q - self.gmin) / (self.gmax - self.gmin)
        return scaled if self.metric.higher_is_better else 1.0 - scaled

    def uct(self, child_id: str, parent_id: str) -> float:
        if self.n(child_id) == 0:
            return -1e8
        explore = math.sqrt(math.log(max(self.n(parent_id), 1)) / self.n(child_id))
        return self.normalized_q(child_id) + self.cfg.uct_c * explore

    def backprop(self, path: list[Node], value: float) -> None:
        for node in path:
            self.visits[node.id] = self.n(node.id) + 1
            self.value[node.id] = self.value.get(node.id, 0.0) + value
        self.gmin = value if self.gmin is None else min(self.gmin, value)
        self.gmax = value if self.gmax is None else max(self.gmax, value)

    # -- policy ----------------------------------------------------------------------------------
    def claimed(self, store: NodeStore, node_id: str) -> bool:
        return bool(pending_children(store, node_id)) or any(node_id in a.parents for a in self.agenda)

    def select(self, store: NodeStore, node_id: str = ROOT) -> str | None:
        """The UCT leaf under ``node_id`` that nobody is expanding, or None when all are claimed."""
        visited = sorted((c for c in store.children(node_id) if self.n(c.id) > 0),
                         key=lambda c: -self.uct(c.id, node_id))
        if not visited:
            return None if self.claimed(store, node_id) else node_id
        for child in visited:  # best first; fall back to the next subtree when one is fully claimed
            leaf = self.select(store, child.id)
            if leaf is not None:
                return leaf
        return None

    def next_action(self, store: NodeStore, rng: random.Random) -> Action:
        if not self.agenda:
            leaf = self.select(store)
            if leaf is None:  # every leaf is being expanded: work on the best node meanwhile
                best = store.best() or store.get(ROOT)
                return Action("improve", (best.id,), tag=f"improve:{best.id}")
            operator = "draft" if leaf == ROOT else "improve"
            self.agenda = [Action(operator, (leaf,), tag=f"expand:{leaf}#{k + 1}")
                           for k in range(self.num_children)]
        return self.agenda.pop(0)

    def observe(self, node: Node, store: NodeStore) -> None:
        if node.status == OK and node.primary is not None:
            self.backprop(path_to_root(node, store), node.primary)  # a fixed chain backs up through its bugs
        elif node.is_buggy and debug_depth(node, store) < self.cfg.max_debug_depth:
            self.agenda.insert(0, Action("debug", (node.id,), tag=f"debug_of:{node.id}"))
        elif (retry := retry_debug(node, store)) is not None:
            self.agenda.insert(0, retry)

    def state_dict(self) -> dict[str, Any]:
        return {"visits": self.visits, "value": self.value, "gmin": self.gmin, "gmax": self.gmax,
                "agenda": [action_to_json(a) for a in self.agenda]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.visits, self.value = dict(state["visits"]), dict(state["value"])
        self.gmin, self.gmax = state["gmin"], state["gmax"]
        self.agenda = [action_from_json(a) for a in state["agenda"]]


def build(cfg: MctsConfig, task: TaskSpec) -> Agent:
    return Agent(policy=MctsPolicy(cfg, task.metric, task.budget.steps),
                 operators=operators.bind(cfg, ("draft", "improve", "debug")))


@hookimpl
def researchbench_register_agents(register: Callable[[AgentSpec], None]) -> None:
    register(AgentSpec(name="mcts", config_class=MctsConfig, build=build, uses_llm=True,
                       description="LLM: AIRA's MCTS - UCT selection, num_children expansions, debug chains"))
