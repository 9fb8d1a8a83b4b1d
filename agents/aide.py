"""AIDE (WecoAI/aideml) as FML-bench adapts it: drafts are alternative edits of the task's baseline.

Policy, AIDE's shape: until the run's drafts exist, draft; then with probability `debug_prob` debug a
buggy leaf whose debug depth is <= `max_debug_depth`; otherwise improve the best scored node (draft
again if there is none). AIDE's review step is `analyze`: one LLM call per executed node writing a
short reading of the result; memory = scored nodes' plan + analysis + metric.

Two deviations from AIDE, for small budgets (issue 18): the number of drafts follows the run's budget
(`num_drafts` when set, else budget // 4 in [1, `max_drafts`], agents/kit/budget_rules.py), so 8 experiments
get 2 drafts, not 5; and debug takes the most promising buggy leaf instead of a uniform one
(`debug_promise`): the one from the best-scored idea, then the fewest failed fixes, then the cheapest
run, so the search returns to a failed but promising idea and does not sink steps into the slowest.

Differences forced by our harness, not by taste: a draft edits the baseline (node 0000) instead of
starting from nothing; a node whose edit failed never ran, so it counts neither as a draft nor as a
child that makes its parent a non-leaf; and claims in flight (store.pending()) count as drafts and
as children, so no buggy leaf is debugged twice at once. The policy is a pure function of the
store, so it keeps no state and resume rebuilds the same tree.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Optional

from researchbench.agents.kit import operators
from researchbench.agents.kit.budget_rules import exploration_width
from researchbench.agents.kit.prompts import PromptConfig
from researchbench.agents.kit.tree import ROOT, debug_depth, is_leaf
from researchbench import OK, Action, Agent, AgentSpec, Node, NodeStore, StatelessPolicy, TaskSpec, domain, hookimpl


@dataclass
class AideConfig(PromptConfig):
    name: str = "aide"
    # None: the run's budget // 4, in [1, max_drafts]; a number is used as given
    num_drafts: Optional[int] = domain(None, ge=1)
    max_drafts: int = domain(5, ge=1)  # AIDE's default num_drafts, reached from 20 experiments on
    debug_prob: float = domain(0.5, ge=0, le=1)  # AIDE's default
    max_debug_depth: int = domain(3, ge=0)  # AIDE's default; the check is <=, so a chain may reach depth 4 as in AIDE
    analyze: bool = True  # AIDE's review call after each executed node (costs no experiment)


def idea_score(node: Node, store: NodeStore) -> float | None:
    """The score of the nearest scored node on the first-parent path: what the failed idea built on."""
    while node.parents:
        node = store.get(node.parents[0])
        if node.status == OK and node.primary is not None:
            return node.primary
    return None


def debug_promise(node: Node, store: NodeStore) -> tuple[float, int, float, int]:
    """Sort key, most promising first: the best idea it came from, fewest failed fixes, cheapest run."""
    score = idea_score(node, store)
    rank = float("inf") if score is None else (-score if store.metric.higher_is_better else score)
    return rank, debug_depth(node, store), node.seconds or 0.0, node.step


class AidePolicy(StatelessPolicy):
    def __init__(self, cfg: AideConfig, budget_steps: int):
        self.cfg = cfg
        self.num_drafts = exploration_width(cfg.num_drafts, budget_steps, cfg.max_drafts)

    def drafts(self, store: NodeStore) -> int:
        """Drafts that ran or are in flight (a failed draft edit is retried, not counted)."""
        return sum(1 for n in store if n.operator == "draft" and n.executed) + \
            sum(1 for n in store.pending() if n.operator == "draft")

    def next_action(self, store: NodeStore, rng: random.Random) -> Action:
        if self.drafts(store) < self.num_drafts:
            return Action("draft", (ROOT,), tag="draft")
        if rng.random() < self.cfg.debug_prob:
            buggy = [n for n in store if n.is_buggy and is_leaf(store, n.id)
                     and debug_depth(n, store) <= self.cfg.max_debug_depth]
            if buggy:
                node = min(buggy, key=lambda n: debug_promise(n, store))
                return Action("debug", (node.id,), tag=f"debug_of:{node.id}")
        best = store.best()
        if best is None:
            return Action("draft", (ROOT,), tag="draft")
        return Action("improve", (best.id,), tag=f"improve:{best.id}")


def build(cfg: AideConfig, task: TaskSpec) -> Agent:
    return Agent(policy=AidePolicy(cfg, task.budget.steps),
                 operators=operators.bind(cfg, ("draft", "improve", "debug"), explored=True),
                 analyze=operators.analyzer(cfg) if cfg.analyze else None)


@hookimpl
def researchbench_register_agents(register: Callable[[AgentSpec], None]) -> None:
    register(AgentSpec(name="aide", config_class=AideConfig, build=build, uses_llm=True,
                       description="LLM: AIDE - budget-scaled drafts of the baseline, debug the most promising failure, improve the best"))
