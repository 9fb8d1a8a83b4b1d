"""The AI Scientist v2 (SakanaAI/AI-Scientist-v2) as FML-bench runs it: staged best-first tree search.

Four stages, each with its share of the experiments (`stage_budgets`, floors, the remainder to the
last): 1 basic implementation, 2 hyperparameter tuning, 3 creative research, 4 ablation and
refinement. Stages 1 and 3 plan batches of `num_parallel` actions at once (v2 runs that many workers):
draft until the stage has its drafts (stage 1: one per generated idea; stage 3: one), else with
`debug_prob` a buggy leaf of debug depth <= `max_debug_depth` (one per node per batch), else improve
the stage's best node (once per batch), else draft. Stages 2 and 4 improve the previous stage's best,
every step a sibling of the last. Every stage starts from the previous stage's best node, including
stage 3's draft; every executed node gets v2's analysis (the shared analyze operator).

Fixed FML-bench bugs: its idea generation never runs (it reads a seed-ideas file no task ships, bug 2);
here the first draft generates `num_ideas` ideas (reflections and an offline novelty check, the shared
AI Scientist ideation) and stage 1 drafts one per idea. Its stage 3 drafts restore the baseline (bug
3); here they edit stage 2's best (the best of its tree, its root included, so a stage that only made
things worse hands on what it started from). Not ported: v2's LLM-written sub-stage goals and per-step journal
summary call (our prompts show the recent attempts and every scored plan instead), and its plots and
write-up. A stage begins once the previous stage's experiments have all finished, so with K in flight
"the previous best" is final. State (stage, roots, agenda) is JSON, checkpointed with every node.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Any, Callable

from researchbench.agents.ai_scientist_v1 import known_ideas
from researchbench.agents.kit import operators, prompts
from researchbench.agents.kit.prompts import PromptConfig
from researchbench.agents.kit.text import Section
from researchbench.agents.kit.tree import ROOT, action_from_json, action_to_json, debug_depth, is_leaf
from researchbench import OK, Action, Agent, AgentSpec, Node, NodeStore, OpContext, Proposal, domain, hookimpl
from researchbench.benchmark.tasks.manifest import Metric, TaskSpec

STAGES = ("basic", "hyperparameter_tuning", "creative_research", "ablation_refinement")
GOALS = (
    "Stage 1 of 4, initial implementation: get a correct, working implementation of the research idea, simple "
    "and robust, that runs well within the limits.",
    "Stage 2 of 4, hyperparameter tuning: keep the method of the solution above and tune its hyperparameters "
    "(learning rates, sizes, regularisation, iterations, ...). Change hyperparameters only, not the method: a "
    "change of method that an analysis above recommends belongs to stage 3, which comes next.",
    "Stage 3 of 4, creative research: improve the method of the solution above with a new idea of your own, a "
    "new component or technique rather than a retuning.",
    "Stage 4 of 4, ablation and refinement: find out which parts of the solution above matter (remove or "
    "simplify one component at a time) and refine it; prefer the simpler solution when {metric} does not suffer.",
)

IDEA_DRAFT = ("Implement the research idea above as an edit of the baseline shown above. Keep this first version "
              "simple and robust, so it runs well inside the time limit.")
DRAFT_FROM_BEST = ("Propose a new approach and implement it as an edit of the solution above (the best of the previous "
                   "stage). It must differ from the other attempts of this stage listed above.")


@dataclass
class AIScientistV2Config(PromptConfig):
    name: str = "ai_scientist_v2"
    # FML-bench's defaults (configs/agents/ai_scientist_v2.yaml)
    num_ideas: int = domain(3, ge=1)  # = stage 1's drafts, as in FML-bench (at most stage 1's budget are generated)
    num_reflections: int = domain(3, ge=0)
    novelty_check: bool = True  # v2's ideation checks novelty with a literature tool; offline here
    debug_prob: float = domain(0.5, ge=0, le=1)
    max_debug_depth: int = domain(3, ge=0)
    num_parallel: int = domain(4, ge=1)  # the batch planned at once in stages 1 and 3
    # each stage's share of the budget, one per stage (STAGES)
    stage_budgets: list[float] = domain(default_factory=lambda: [0.1, 0.2, 0.5, 0.2], ge=0, le=1, length=4)
    analyze: bool = True


def split_budget(steps: int, shares: list[float]) -> list[int]:
    """Floors of each share, the remainder to the last stage (10 steps: 1/2/5/2; 50: 5/10/25/10). Ours: while
    the budget allows, every stage gets at least one experiment (FML-bench's floors skip stage 1, and with it
    the ideas, below 10 experiments)."""
    least = 1 if steps >= len(shares) else 0
    sizes = [max(least, int(share * steps)) for share in shares[:-1]]
    return sizes + [max(0, steps - sum(sizes))]


def best_of(nodes: list[Node], metric: Metric) -> Node | None:
    best = None
    for node in nodes:
        if node.status == OK and (best is None or metric.outranks(node, best)):
            best = node
    return best


class AIScientistV2Policy:
    def __init__(self, cfg: AIScientistV2Config, task: TaskSpec):
        self.cfg, self.metric = cfg, task.metric
        self.budgets = split_budget(task.budget.steps, list(cfg.stage_budgets))
        self.stage = 0
        self.roots = [ROOT]  # the node each stage starts from: the previous stage's best
        self.agenda: list[Action] = []

    def in_stage(self, nodes: list[Node], stage: int | None = None) -> list[Node]:
        stage = self.stage if stage is None else stage
        return [n for n in nodes if n.hints.get("stage") == stage]

    def used(self, store: NodeStore) -> int:
        """Experiments the current stage has spent or has in flight."""
        return sum(1 for n in self.in_stage(list(store)) if n.executed) + len(self.in_stage(store.pending()))

    def next_action(self, store: NodeStore, rng: random.Random) -> Action | None:
        while self.used(store) >= self.budgets[self.stage]:
            if self.stage == len(STAGES) - 1 or self.in_stage(store.pending()):
                return None  # the run's budget is spent, or the stage's last results are still coming
            # the best of the stage's tree, its root included: a tuning stage that only made things worse
            # hands on what it started from
            best = best_of([store.get(self.roots[-1]), *self.in_stage(list(store))], self.metric)
            self.stage += 1
            self.roots.append(best.id if best is not None else self.roots[-1])
            self.agenda = []
        if not self.agenda:
            self.agenda = self.plan_batch(store, rng, min(self.cfg.num_parallel, self.budgets[self.stage] - self.used(store)))
        if self.agenda[0].hints.get("idea", 0) > 0 and any(p.hints.get("ideate") for p in store.pending()):
            return None  # this draft's idea is still being generated
        return self.agenda.pop(0)

    def plan_batch(self, store: NodeStore, rng: random.Random, size: int) -> list[Action]:
        stage, root = self.stage, self.roots[-1]
        hints = {"stage": stage}
        if stage in (1, 3):
            return [Action("improve", (root,), hints, f"{STAGES[stage]}:improve:{root}") for _ in range(size)]
        nodes = self.in_stage(list(store))
        wanted = min(self.cfg.num_ideas, self.budgets[0]) if stage == 0 else 1
        drafts = sum(1 for n in [*nodes, *self.in_stage(store.pending())] if n.operator == "draft" and
                     (n.executed or n.status == "pending"))
        batch: list[Action] = []

        ideas_asked = any(n.memo.get("ideas") is not None for n in store) or \
            any(p.hints.get("ideate") for p in store.pending())

        def draft() -> Action:
            k = drafts + sum(a.operator == "draft" for a in batch)
            first = not ideas_asked and not any(a.hints.get("ideate") for a in batch)
            extra = ({"idea": k, "ideate": True} if first else {"idea": k}) if stage == 0 else {}
            return Action("draft", (root,), {**hints, **extra}, f"{STAGES[stage]}:draft#{k + 1}")

        for _ in range(size):
            if drafts + sum(a.operator == "draft" for a in batch) < wanted:
                batch.append(draft())
                continue
            if rng.random() < self.cfg.debug_prob:
                taken = {a.parents[0] for a in batch}
                buggy = [n for n in nodes if n.is_buggy and is_leaf(store, n.id) and n.id not in taken
                         and debug_depth(n, store) <= self.cfg.max_debug_depth]
                if buggy:
                    node = rng.choice(buggy)
                    batch.append(Action("debug", (node.id,), hints, f"{STAGES[stage]}:debug_of:{node.id}"))
                    continue
            best = best_of(nodes, self.metric)
            if best is not None and all(a.parents != (best.id,) or a.operator != "improve" for a in batch):
                batch.append(Action("improve", (best.id,), hints, f"{STAGES[stage]}:improve:{best.id}"))
            else:
                batch.append(draft())
        return batch

    def observe(self, node: Node, store: NodeStore) -> None:
        pass  # everything else follows from the store: stage membership is in each node's hints

    def state_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "roots": self.roots, "agenda": [action_to_json(a) for a in self.agenda]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.stage, self.roots = state["stage"], list(state["roots"])
        self.agenda = [action_from_json(a) for a in state["agenda"]]


def step(cfg: AIScientistV2Config, ctx: OpContext, parents: list[Node], action: Action) -> Proposal:
    """A draft, improve or debug with the stage's goal; stage 1's first draft generates the ideas first."""
    stage, calls, memo = action.hints["stage"], [], {}
    if action.hints.get("ideate"):
        budget = split_budget(ctx.budget.steps, list(cfg.stage_budgets))[0]
        generated, calls = operators.ideate(ctx, cfg, parents[0], min(cfg.num_ideas, max(budget, 1)),
                                            cfg.num_reflections, cfg.novelty_check)
        ideas = [i for i in generated if i.get("novel", True)] or generated  # a draft needs something to try
        memo = {"ideas": ideas, "dropped": [i["Name"] for i in generated if i not in ideas]}
    ideas = memo.get("ideas") if memo else known_ideas(ctx.store)
    idea = ideas[action.hints["idea"]] if "idea" in action.hints and action.hints["idea"] < len(ideas) else None
    extra = [Section("Research idea", [prompts.idea_text(idea, prompts.IDEA_CHARS)], 95)] if idea else []
    standard = prompts.JOBS[action.operator]
    if action.operator == "draft":
        standard = IDEA_DRAFT if idea else DRAFT_FROM_BEST if parents[0].id != ROOT else standard
    job = f"{GOALS[stage].format(metric=ctx.task.metric.name)}\n\n" + standard.format(
        metric=ctx.task.metric.name, reason=parents[0].bug_reason or "error")
    proposal = operators.edit(ctx, parents, action, action.operator, cfg, explored=True, extra=extra, job=job)
    proposal.llm_calls = calls + proposal.llm_calls
    proposal.memo = memo
    return proposal


def build(cfg: AIScientistV2Config, task: TaskSpec) -> Agent:
    op = functools.partial(step, cfg)
    return Agent(policy=AIScientistV2Policy(cfg, task), operators={"draft": op, "improve": op, "debug": op},
                 analyze=operators.analyzer(cfg) if cfg.analyze else None)


@hookimpl
def researchbench_register_agents(register: Callable[[AgentSpec], None]) -> None:
    register(AgentSpec(name="ai_scientist_v2", config_class=AIScientistV2Config, build=build, uses_llm=True,
                       description="LLM: The AI Scientist v2 - ideas, then a 4-stage best-first tree search, each stage from the last's best"))
