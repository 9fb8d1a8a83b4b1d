"""karpathy/autoresearch as FML-bench runs it: greedy keep/discard hill climbing, one idea at a time.

Every experiment tries ONE idea on the incumbent (the kept best). A result strictly better than the
incumbent is kept and becomes the incumbent; anything else is discarded, so the next idea starts
again from the incumbent. A crash is debugged in place, up to `max_debug_retries` fixes in a row
(each fix is judged keep/discard like any experiment); after that the crashed line is dropped. The
prompt shows autoresearch's results table: every experiment with keep / discard / crash and its
description. The incumbent starts as the baseline's measured val score (node 0000).

Differences from the reference, each for a reason: FML-bench asks for the idea in one LLM call and
has its shared editor implement it in a second; our edit reply starts with the plan (the idea) and
then the edits, so one call does both, as karpathy's single coding agent does. FML-bench counts the
first crash against `max_debug_retries`, so 3 gives 2 fixes; we give the 3 the name promises. A
failed idea or edit is recorded and fed back (no silent fallback idea) and spends no experiment.
Keep/discard is a fold over the nodes in the order they finished, so the policy is stateless and a
resumed run rebuilds it exactly; with K experiments in flight each new idea starts from the
incumbent of the moment, and a result is judged against the incumbent when it arrives.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from typing import Callable

from researchbench.agents.kit import operators, prompts
from researchbench.agents.kit.prompts import PromptConfig
from researchbench.agents.kit.tree import ROOT, debug_depth, is_leaf
from researchbench import (OK, Action, Agent, AgentSpec, Node, NodeStore, OpContext, Proposal, StatelessPolicy,
                           TaskSpec, domain, hookimpl)

KEEP, DISCARD, CRASH = "keep", "discard", "crash"
MAIN = "main"

JOB = (
    "Try ONE idea that you expect to improve {metric}: a single, self-contained change to the current solution "
    "above (the kept best). It is kept only if it beats the current best ({best}); otherwise it is discarded "
    "and the next idea starts again from the current best. Use the log of experiments above: do not repeat a "
    "discarded idea, build on what was kept. Simpler is better: a tiny gain that adds much complexity is not worth it, "
    "and removing code for an equal result is a win."
)


@dataclass
class AutoresearchConfig(PromptConfig):
    name: str = "autoresearch"
    # FML-bench's value (its off-by-one runs 2 fixes; we run 3, see the docstring)
    max_debug_retries: int = domain(3, ge=0)


@dataclass
class Lane:
    """One hill climb: its incumbent and its experiments in arrival order with keep/discard/crash."""

    incumbent: str
    rows: list[tuple[str, str]] = field(default_factory=list)


def lane_of(node: Node) -> str:
    return str(node.hints.get("lane", MAIN))


def replay(store: NodeStore, starts: dict[str, str]) -> dict[str, Lane]:
    """Keep/discard for every lane, folded over the finished nodes in the order they arrived."""
    lanes = {name: Lane(start) for name, start in starts.items()}
    for node in store:
        lane = lanes.get(lane_of(node))
        if node.step == 0 or not node.executed or lane is None:
            continue
        incumbent = store.get(lane.incumbent)
        if node.status != OK:
            lane.rows.append((node.id, CRASH))
        elif incumbent.status != OK or store.metric.better(node.primary, incumbent.primary):
            lane.rows.append((node.id, KEEP))
            lane.incumbent = node.id
        else:
            lane.rows.append((node.id, DISCARD))
    return lanes


def open_crash(store: NodeStore, lane: Lane, max_retries: int) -> Node | None:
    """The newest crash still worth a fix: nobody built on it, its chain of fixes is shorter than
    ``max_retries``, and fewer than two fixes of it failed to apply."""
    for node_id, status in reversed(lane.rows):
        node = store.get(node_id)
        unrun = [c for c in store.children(node_id) if c.operator == "debug" and not c.executed]
        if status == CRASH and is_leaf(store, node_id) and debug_depth(node, store) < max_retries and len(unrun) < 2:
            return node
    return None


def lane_action(store: NodeStore, name: str, lane: Lane, max_retries: int, hints: dict | None = None) -> Action:
    """Fix the lane's open crash, else try a new idea on its incumbent."""
    hints = {"lane": name, **(hints or {})}
    crash = open_crash(store, lane, max_retries)
    if crash is not None:
        return Action("debug", (crash.id,), hints, f"{name}:debug_of:{crash.id}")
    incumbent = store.get(lane.incumbent)
    operator = "debug" if incumbent.is_buggy else "improve"  # a crashing baseline is fixed before ideas
    return Action(operator, (incumbent.id,), hints, f"{name}:{operator}:{incumbent.id}")


def log_rows(store: NodeStore, lanes: dict[str, Lane], limit: int = 0) -> list[tuple[Node, str]]:
    """Every lane's experiments in arrival order, each with its keep/discard/crash (the last ``limit``)."""
    status = {node_id: s for lane in lanes.values() for node_id, s in lane.rows}
    rows = [(node, status[node.id]) for node in store if node.id in status]
    return rows[-limit:] if limit else rows


class AutoresearchPolicy(StatelessPolicy):
    def __init__(self, cfg: AutoresearchConfig):
        self.cfg = cfg

    def next_action(self, store: NodeStore, rng: random.Random) -> Action:
        return lane_action(store, MAIN, replay(store, {MAIN: ROOT})[MAIN], self.cfg.max_debug_retries)


def idea_job(ctx: OpContext, incumbent: Node) -> str:
    best = f"{ctx.task.metric.name} = {incumbent.primary:.5g}" if incumbent.status == OK else "none scored yet"
    return JOB.format(metric=ctx.task.metric.name, best=best)


def experiment(cfg: AutoresearchConfig, ctx: OpContext, parents: list[Node], action: Action) -> Proposal:
    rows = log_rows(ctx.store, replay(ctx.store, {MAIN: ROOT}))
    extra = [prompts.experiment_log_section(ctx, rows)]
    if action.operator == "debug":
        return operators.edit(ctx, parents, action, "debug", cfg, extra=extra)
    return operators.edit(ctx, parents, action, "improve", cfg, extra=extra, job=idea_job(ctx, parents[0]))


def build(cfg: AutoresearchConfig, task: TaskSpec) -> Agent:
    op = functools.partial(experiment, cfg)
    return Agent(policy=AutoresearchPolicy(cfg), operators={"improve": op, "debug": op})


@hookimpl
def researchbench_register_agents(register: Callable[[AgentSpec], None]) -> None:
    register(AgentSpec(name="autoresearch", config_class=AutoresearchConfig, build=build, uses_llm=True,
                       description="LLM: karpathy's autoresearch - one idea at a time, keep if better else discard"))
