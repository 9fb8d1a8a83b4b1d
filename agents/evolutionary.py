"""AIRA-dojo's evolutionary search (FunSearch-style islands) over edits of the task's baseline.

Generation 0 drafts `individuals_per_generation` solutions, each for a uniformly chosen island.
Later generations pick an island by softmax of its normalised average fitness at temperature T(g)
(linear from `initial_temp` to `final_temp` over `num_generations`), then one parent (improve) or,
from generation `num_generations_till_crossover` on with probability `crossover_prob`, two parents
(crossover) from that island by softmax of normalised fitness, without replacement. A buggy child
gets a debug chain of up to `max_debug_depth` steps; only scored children (or their fixed
descendants) join the population. When a generation's work is handed out, the next one starts by
admitting its offspring: generation 0 unconditionally, later ones when at least as fit as their
island's average; islands over `max_island_size` drop their worst; and from generation
`num_generations_till_migration` on, with probability `migration_prob`, the weaker half of the
islands are reset to their best plus one migrant from a stronger island.

At small budgets the sizes follow the run's budget unless set (agents/kit/budget_rules.py): individuals per
generation = budget // 4 in [1, `max_individuals`]; islands = one per individual, at most `max_islands`
(two from a budget of 8: with one island there is no migration, the method's point); the temperature
schedule spans budget // individuals generations, so selection sharpens within the run, not after it.

Crossover pairs two members of an island that are not one another's ancestor and were not crossed
before (else it mutates instead), and its prompt states how the two are related.

State (generation, islands, fitness range, agenda, offspring awaiting admission) is JSON,
checkpointed with every node. Offspring that finish after their generation closed (parallel runs)
are admitted with the next one instead of being lost.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from researchbench.agents.kit import operators
from researchbench.agents.kit.budget_rules import exploration_width
from researchbench.agents.kit.prompts import PromptConfig
from researchbench.agents.kit.tree import ROOT, action_from_json, action_to_json, ancestors, debug_depth, retry_debug
from researchbench import OK, Action, Agent, AgentSpec, Node, NodeStore, domain, hookimpl
from researchbench.benchmark.tasks.manifest import Metric, TaskSpec


@dataclass
class EvolutionaryConfig(PromptConfig):
    name: str = "evolutionary"
    # AIRA ships one island of up to 500, 5 individuals x 100 generations, no temperature schedule and
    # no migration. Our budgets are 10-50 experiments, so: two small islands (the point of the method),
    # 4 individuals a generation (gen 0 = 4 drafts), a schedule that sharpens selection over ~10
    # generations, crossover from generation 2 and migration from generation 3, debug chains of 3.
    # Those are the sizes from 16 experiments on; below, 4 drafts would be half of an 8-step run.
    num_islands: Optional[int] = domain(None, ge=1)  # None: individuals // 2, in [1, max_islands]
    max_islands: int = domain(2, ge=1)
    max_island_size: int = domain(8, ge=1)
    # None: the run's budget // 4, in [1, max_individuals]
    individuals_per_generation: Optional[int] = domain(None, ge=1)
    max_individuals: int = domain(4, ge=1)
    num_generations: Optional[int] = domain(None, ge=1)  # temperature schedule length; None: budget // individuals
    initial_temp: float = domain(1.0, ge=0)
    final_temp: float = domain(0.3, ge=0)
    crossover_prob: float = domain(0.5, ge=0, le=1)
    num_generations_till_crossover: int = domain(2, ge=0)
    migration_prob: float = domain(0.3, ge=0, le=1)
    num_generations_till_migration: int = domain(3, ge=0)
    max_debug_depth: int = domain(3, ge=0)


def softmax_choice(rng: random.Random, scores: list[float], temp: float, k: int = 1) -> list[int]:
    """k distinct indices drawn with probability proportional to exp(score / temp)."""
    weights = [math.exp(s / max(temp, 1e-6)) for s in scores]
    chosen: list[int] = []
    for _ in range(min(k, len(scores))):
        live = [(i, w) for i, w in enumerate(weights) if i not in chosen]
        pick = rng.random() * sum(w for _, w in live)
        for i, w in live:
            pick -= w
            if pick <= 0:
                break
        chosen.append(i)
    return chosen


class EvolutionaryPolicy:
    def __init__(self, cfg: EvolutionaryConfig, metric: Metric, budget_steps: int):
        self.cfg, self.metric = cfg, metric
        self.individuals = exploration_width(cfg.individuals_per_generation, budget_steps, cfg.max_individuals)
        self.num_islands = cfg.num_islands if cfg.num_islands is not None else \
            max(1, min(cfg.max_islands, self.individuals))
        self.num_generations = cfg.num_generations if cfg.num_generations is not None else \
            max(1, budget_steps // self.individuals)
        self.generation = 0
        self.islands: list[list[str]] = [[] for _ in range(self.num_islands)]
        self.gmin: float | None = None
        self.gmax: float | None = None
        self.agenda: list[Action] = []
        self.offspring: list[list[Any]] = []  # [node id, island] of scored children not yet admitted
        self.started = False

    # -- fitness ---------------------------------------------------------------------------------
    def normalized(self, score: float | None) -> float:
        """0..1 with 1 = best seen; 0.5 while every score is equal; 0 for a missing score."""
        if score is None or self.gmin is None or self.gmax is None:
            return 0.0
        if self.gmax == self.gmin:
            return 0.5
        scaled = (score - self.gmin) / (self.gmax - self.gmin)
        return scaled if self.metric.higher_is_better else 1.0 - scaled

    def average(self, store: NodeStore, island: list[str]) -> float | None:
        return sum(store.get(i).primary for i in island) / len(island) if island else None

    def temperature(self) -> float:
        frac = min(self.generation / max(self.num_generations, 1), 1.0)
        return self.cfg.initial_temp - (self.cfg.initial_temp - self.cfg.final_temp) * frac

    # -- generations -----------------------------------------------------------------------------
    def admit(self, store: NodeStore, rng: random.Random) -> None:
        """Close a generation: admission by island average, size cap, then migration."""
        for node_id, island in self.offspring:
            members, score = self.islands[island], store.get(node_id).primary
            self.gmin = score if self.gmin is None else min(self.gmin, score)
            self.gmax = score if self.gmax is None else max(self.gmax, score)
            average = self.average(store, members)
            if self.generation == 0 or average is None or not self.metric.better(average, score):
                members.append(node_id)
            while len(members) > self.cfg.max_island_size:
                members.remove(self.worst(store, members))
        self.offspring = []
        migrating = self.generation >= self.cfg.num_generations_till_migration
        if self.num_islands > 1 and migrating and rng.random() <= self.cfg.migration_prob:
            self.migrate(store, rng)

    def worst(self, store: NodeStore, members: list[str]) -> str:
        return min(members, key=lambda i: self.normalized(store.get(i).primary))

    def best(self, store: NodeStore, members: list[str]) -> str:
        return max(members, key=lambda i: self.normalized(store.get(i).primary))

    def migrate(self, store: NodeStore, rng: random.Random) -> None:
        """Reset the weaker half of the islands to their best plus a migrant from a stronger island."""
        ranked = sorted(range(len(self.islands)), key=lambda k: max(
            (self.normalized(store.get(i).primary) for i in self.islands[k]), default=-1.0))
        weak, strong = ranked[:len(ranked) // 2], ranked[len(ranked) // 2:]
        for w in weak:
            self.islands[w] = [self.best(store, self.islands[w])] if self.islands[w] else []
            founders = [s for s in strong if len(self.islands[s]) > 1]
            if not founders:
                continue
            source = self.islands[rng.choice(founders)]
            top = self.normalized(store.get(self.best(store, source)).primary)
            candidates = [i for i in source if self.normalized(store.get(i).primary) != top]
            if candidates:
                migrant = candidates[softmax_choice(rng, [self.normalized(store.get(i).primary)
                                                          for i in candidates], 1.0)[0]]
                source.remove(migrant)
                self.islands[w].append(migrant)

    def plan_generation(self, store: NodeStore, rng: random.Random) -> list[Action]:
        actions = []
        for k in range(self.individuals):
            tag = f"gen:{self.generation}#{k + 1}"
            actions.append(self.sample(store, rng, tag, planned=actions) if any(self.islands) else
                           Action("draft", (ROOT,), {"island": rng.randrange(self.num_islands)}, tag))
        return actions

    def sample(self, store: NodeStore, rng: random.Random, tag: str, planned: Sequence[Action] = ()) -> Action:
        """Island by softmax of average fitness among islands holding enough members (AIRA resamples
        until one does, which draws from this same distribution), then parents by softmax; `planned`: the
        generation's actions so far, whose crossover pairs are taken."""
        temp = self.temperature()
        crossover = self.generation >= self.cfg.num_generations_till_crossover and rng.random() < self.cfg.crossover_prob
        eligible = [k for k, members in enumerate(self.islands) if len(members) >= (2 if crossover else 1)]
        if not eligible:  # no island holds two members yet: mutate instead
            crossover, eligible = False, [k for k, members in enumerate(self.islands) if members]
        averages = [self.normalized(self.average(store, self.islands[k])) for k in eligible]
        island = eligible[softmax_choice(rng, averages, temp)[0]]
        members = self.islands[island]
        fitness = [self.normalized(store.get(i).primary) for i in members]
        first = members[softmax_choice(rng, fitness, temp)[0]]
        if crossover:
            taken = [set(a.parents) for a in (*planned, *self.agenda) if a.operator == "crossover"]
            mates = [k for k, other in enumerate(members)
                     if _fresh_pair(store, first, other) and {first, other} not in taken]
            if mates:
                second = members[mates[softmax_choice(rng, [fitness[k] for k in mates], temp)[0]]]
                return Action("crossover", (first, second), {"island": island}, tag)
        return Action("improve", (first,), {"island": island}, tag)

    # -- policy ----------------------------------------------------------------------------------
    def next_action(self, store: NodeStore, rng: random.Random) -> Action:
        if not self.agenda:
            if self.started:
                self.admit(store, rng)
                self.generation += 1
            self.started = True
            self.agenda = self.plan_generation(store, rng)
        return self.agenda.pop(0)

    def observe(self, node: Node, store: NodeStore) -> None:
        island = node.hints.get("island")
        if island is None:
            return
        if node.status == OK and node.primary is not None:
            self.offspring.append([node.id, island])
        elif node.is_buggy and debug_depth(node, store) < self.cfg.max_debug_depth:
            self.agenda.insert(0, Action("debug", (node.id,), {"island": island}, f"debug_of:{node.id}"))
        elif (retry := retry_debug(node, store)) is not None:
            self.agenda.insert(0, retry)

    def state_dict(self) -> dict[str, Any]:
        return {"generation": self.generation, "islands": self.islands, "gmin": self.gmin, "gmax": self.gmax,
                "agenda": [action_to_json(a) for a in self.agenda], "offspring": self.offspring,
                "started": self.started}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generation, self.islands = state["generation"], [list(i) for i in state["islands"]]
        self.gmin, self.gmax, self.started = state["gmin"], state["gmax"], state["started"]
        self.agenda = [action_from_json(a) for a in state["agenda"]]
        self.offspring = [list(o) for o in state["offspring"]]


def _fresh_pair(store: NodeStore, a: str, b: str) -> bool:
    """Whether crossing a and b can make something new: two nodes, neither the other's ancestor (a child
    already holds what its parent has), not crossed together before."""
    if a == b or a in ancestors(store, b) or b in ancestors(store, a):
        return False
    return not any(n.operator == "crossover" and set(n.parents) == {a, b} for n in store)


def build(cfg: EvolutionaryConfig, task: TaskSpec) -> Agent:
    return Agent(policy=EvolutionaryPolicy(cfg, task.metric, task.budget.steps), operators=operators.bind(cfg))


@hookimpl
def researchbench_register_agents(register: Callable[[AgentSpec], None]) -> None:
    register(AgentSpec(name="evolutionary", config_class=EvolutionaryConfig, build=build, uses_llm=True,
                       description="LLM: AIRA's evolutionary search - islands, softmax parents, crossover, migration"))
