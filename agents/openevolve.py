"""OpenEvolve (an AlphaEvolve re-implementation, v0.2.25) on our engine: MAP-Elites islands with an archive.

Database (OpenEvolve's openevolve/database.py): each island keeps a feature grid (`complexity` = code length,
`diversity` = mean distance to a max-min reference set; min-max scaled by running stats into
`feature_bins`); a program takes its cell when empty or when fitter than the occupant, which leaves
the island and the archive; a program that loses still joins the island. The archive keeps the
`archive_size` fittest working programs. Iteration i works on island i mod `num_islands`: the parent
is uniform from the island (`exploration_ratio`), uniform from the archive's members on the island,
else the whole archive (`exploitation_ratio`), or fitness-proportional with weight max(fitness,
0.001); the inspirations are other island programs drawn uniformly. The one operator, `evolve`, asks
for SEARCH/REPLACE diffs of the parent, showing the island's previous attempts, top and diverse
programs and inspirations. No debug operator: a failed parent's output is in the prompt, so evolving
it fixes it. Every `migration_interval` island-generations each island copies its top
`migration_rate` share (>= 1, never a migrant) to both ring neighbours unless they hold that code.

Differences, and why: the baseline is node 0000, run once by the engine like for every agent and seeded
once, on island 0 (FML-bench evaluates it again for free and seeds every island, §7.1 #14); an empty
island evolves the global best and the child lands on that island (OpenEvolve's fallback piled every
child onto island 0, its issue #391); fitness follows the task's metric direction (OpenEvolve only
maximises) and is min-max normalised over the island for the proportional draw; a failed run is the
least fit program and never an elite; the inspirations knob is live (FML-bench's is dead, §7.1 #14);
top and inspiration programs are shown as diffs against the parent, since a task is several files.
State (islands, grids, archive, feature stats, generations) is JSON, checkpointed with every node.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Callable

from researchbench.agents.kit import operators, prompts
from researchbench.agents.kit.prompts import PromptConfig
from researchbench.agents.kit.text import Section, assemble, diff_stats, head_lines, summarize
from researchbench.agents.kit.tree import ROOT
from researchbench import OK, Action, Agent, AgentSpec, Node, NodeStore, OpContext, Proposal, domain, hookimpl
from researchbench.benchmark.edits import FORMATS, format_instructions, unified_diff
from researchbench.benchmark.tasks.manifest import Metric, TaskSpec

@dataclass
class OpenEvolveConfig(PromptConfig):
    name: str = "openevolve"
    # OpenEvolve's configs/default_config.yaml unless marked FML: FML-bench's port
    # (its OpenEvolve baseline's config) sized islands, grid, archive and migration for budgets of ~50 evaluations.
    num_islands: int = domain(3, ge=1)  # FML (OpenEvolve 5)
    feature_bins: int = domain(5, ge=1)  # FML (OpenEvolve 10: a 10x10 grid stays nearly empty at 50 programs)
    archive_size: int = domain(30, ge=1)  # FML (OpenEvolve 100)
    population_size: int = domain(1000, ge=1)
    exploration_ratio: float = domain(0.2, ge=0, le=1)
    exploitation_ratio: float = domain(0.7, ge=0, le=1)
    migration_interval: int = domain(10, ge=1)  # island-generations; FML (OpenEvolve 50)
    migration_rate: float = domain(0.1, ge=0, le=1)
    num_top_programs: int = domain(3, ge=0)
    num_diverse_programs: int = domain(2, ge=0)
    num_inspirations: int = domain(3, ge=0)  # OpenEvolve's parallel path draws num_top_programs of them
    diversity_reference_size: int = domain(20, ge=1)
    edit_format: str = domain("search_replace", one_of=FORMATS)  # diff_based_evolution: true


def code_stats(files: dict[str, str]) -> tuple[int, int, frozenset[str]]:
    code = "\n".join(files[k] for k in sorted(files))
    return len(code), code.count("\n") + 1, frozenset(code)


def code_distance(a: tuple[int, int, frozenset[str]], b: tuple[int, int, frozenset[str]]) -> float:
    """OpenEvolve's `_fast_code_diversity`: length, line-count and character-set differences."""
    return 0.1 * abs(a[0] - b[0]) + 10 * abs(a[1] - b[1]) + 0.5 * len(a[2] ^ b[2])


class OpenEvolvePolicy:
    def __init__(self, cfg: OpenEvolveConfig, metric: Metric):
        self.cfg, self.metric = cfg, metric
        n = cfg.num_islands
        self.islands: list[list[str]] = [[] for _ in range(n)]
        self.grids: list[dict[str, str]] = [{} for _ in range(n)]
        self.programs: list[str] = []  # every program in the database, oldest first
        self.archive: list[str] = []
        self.migrants: list[list[Any]] = []  # [island, node id] copies made by migration
        self.generations = [0] * n
        self.last_migration = 0
        self.stats: dict[str, list[float]] = {}  # feature -> [min, max] seen
        self.iteration = 0
        self.seeded = False
        self._stats_cache: dict[str, tuple[int, int, frozenset[str]]] = {}  # derived from the store

    def fitness(self, store: NodeStore, node_id: str) -> float:
        """Higher is better whatever the metric's direction; a failed run is -inf."""
        node = store.get(node_id)
        if node.status != OK or node.primary is None:
            return -math.inf
        return node.primary if self.metric.higher_is_better else -node.primary

    def weights(self, store: NodeStore, ids: list[str]) -> list[float]:
        """OpenEvolve's max(fitness, 0.001), with fitness min-max normalised over `ids`."""
        fits = [self.fitness(store, i) for i in ids]
        live = [f for f in fits if f > -math.inf]
        lo, hi = (min(live), max(live)) if live else (0.0, 0.0)
        return [0.001 if f == -math.inf else max((f - lo) / (hi - lo) if hi > lo else 1.0, 0.001) for f in fits]

    def ranked(self, store: NodeStore, ids: list[str]) -> list[str]:
        return sorted(ids, key=lambda i: -self.fitness(store, i))  # stable: older first on ties

    def _code(self, store: NodeStore, node_id: str) -> tuple[int, int, frozenset[str]]:
        if node_id not in self._stats_cache:
            self._stats_cache[node_id] = code_stats(store.files(store.get(node_id)))
        return self._stats_cache[node_id]

    def diversity(self, store: NodeStore, node_id: str) -> float:
        """Mean distance to a greedy max-min reference set of the database's other programs."""
        others = [p for p in self.programs if p != node_id]
        if not others:
            return 0.0
        reference = [others[0]]
        while len(reference) < min(self.cfg.diversity_reference_size, len(others)):
            far = max((p for p in others if p not in reference), key=lambda p: min(
                code_distance(self._code(store, p), self._code(store, r)) for r in reference))
            reference.append(far)
        own = self._code(store, node_id)
        return sum(code_distance(own, self._code(store, r)) for r in reference) / len(reference)

    def cell(self, store: NodeStore, node_id: str) -> str:
        values = {"complexity": float(self._code(store, node_id)[0]), "diversity": self.diversity(store, node_id)}
        bins = []
        for name in ("complexity", "diversity"):
            lo, hi = self.stats.get(name, [values[name], values[name]])
            lo, hi = min(lo, values[name]), max(hi, values[name])
            self.stats[name] = [lo, hi]
            scaled = (values[name] - lo) / (hi - lo) if hi > lo else 0.5
            bins.append(min(int(scaled * self.cfg.feature_bins), self.cfg.feature_bins - 1))
        return "-".join(map(str, bins))

    def add(self, store: NodeStore, node_id: str, island: int, migrant: bool = False) -> None:
        key, grid, members = self.cell(store, node_id), self.grids[island], self.islands[island]
        occupant = grid.get(key)
        if occupant is None or self.fitness(store, node_id) > self.fitness(store, occupant):
            if occupant is not None and occupant != node_id:
                members.remove(occupant)
                self.migrants = [m for m in self.migrants if m != [island, occupant]]
                self.archive = [a for a in self.archive if a != occupant]
            grid[key] = node_id
        if node_id not in members:
            members.append(node_id)
        if migrant:
            self.migrants.append([island, node_id])
        if node_id not in self.programs:
            self.programs.append(node_id)
        self.update_archive(store, node_id)
        while len(self.programs) > self.cfg.population_size:
            self.evict(store, self.ranked(store, self.programs)[-1])

    def update_archive(self, store: NodeStore, node_id: str) -> None:
        if node_id in self.archive or self.fitness(store, node_id) == -math.inf:
            return
        worst = self.ranked(store, self.archive)[-1] if len(self.archive) >= self.cfg.archive_size else None
        if worst is None:
            self.archive.append(node_id)
        elif self.fitness(store, node_id) > self.fitness(store, worst):
            self.archive[self.archive.index(worst)] = node_id

    def evict(self, store: NodeStore, node_id: str) -> None:
        self.programs.remove(node_id)
        self.archive = [a for a in self.archive if a != node_id]
        self.migrants = [m for m in self.migrants if m[1] != node_id]
        self.islands = [[m for m in members if m != node_id] for members in self.islands]
        self.grids = [{k: v for k, v in grid.items() if v != node_id} for grid in self.grids]

    def migrate(self, store: NodeStore) -> None:
        """Each island's top share (never a migrant) is copied to both ring neighbours."""
        n = self.cfg.num_islands
        for i in range(n):
            natives = [p for p in self.ranked(store, self.islands[i]) if [i, p] not in self.migrants]
            top = natives[:max(1, int(self.cfg.migration_rate * len(self.islands[i])))]
            for target in sorted({(i + 1) % n, (i - 1) % n} - {i}):
                for program in top:
                    held = {tuple(sorted(store.get(p).files.items())) for p in self.islands[target]}
                    if tuple(sorted(store.get(program).files.items())) not in held:
                        self.add(store, program, target, migrant=True)
        self.last_migration = max(self.generations)

    def sample(self, store: NodeStore, rng: random.Random, island: int) -> tuple[str, str]:
        """(parent id, how it was drawn) for an iteration on `island`."""
        members = self.islands[island]
        if not members:  # an empty island starts from the global best; the child is its own
            return self.ranked(store, self.programs)[0], "best"
        r = rng.random()
        if r < self.cfg.exploration_ratio:
            return rng.choice(members), "explore"
        if r < self.cfg.exploration_ratio + self.cfg.exploitation_ratio and self.archive:
            elites = [a for a in self.archive if a in members] or self.archive
            return rng.choice(elites), "exploit"
        return rng.choices(members, weights=self.weights(store, members))[0], "weighted"

    def next_action(self, store: NodeStore, rng: random.Random) -> Action:
        if not self.seeded:
            self.add(store, ROOT, 0)
            self.seeded = True
        island = self.iteration % self.cfg.num_islands
        self.iteration += 1
        parent, mode = self.sample(store, rng, island)
        pool = [p for p in (self.islands[island] or self.programs) if p != parent]
        ranked = self.ranked(store, pool)
        top = ranked[:self.cfg.num_top_programs]
        diverse = rng.sample(ranked[len(top):], min(self.cfg.num_diverse_programs, len(ranked) - len(top)))
        picks = rng.sample(pool, min(self.cfg.num_inspirations, len(pool)))
        inspirations = [[p, "migrant" if [island, p] in self.migrants else "high performer" if
                         self.fitness(store, p) >= self.fitness(store, parent) else "diverse"] for p in picks]
        hints = {"island": island, "mode": mode, "top": top, "diverse": diverse, "inspirations": inspirations}
        return Action("evolve", (parent,), hints, f"island:{island}:{mode}")

    def observe(self, node: Node, store: NodeStore) -> None:
        island = node.hints.get("island")
        if island is None or not node.executed:  # an edit that never ran is no program
            return
        self.add(store, node.id, island)
        self.generations[island] += 1
        if max(self.generations) - self.last_migration >= self.cfg.migration_interval and self.cfg.num_islands > 1:
            self.migrate(store)

    _STATE = ("islands", "grids", "programs", "archive", "migrants", "generations", "last_migration", "stats",
              "iteration", "seeded")

    def state_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self._STATE}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for key in self._STATE:
            setattr(self, key, state[key])


# -- the operator ----------------------------------------------------------------------------------
JOB = ("Improve the current program on {metric} ({direction} is better). {learn} Programs are kept in a grid by "
       "code length and by how different they are from the rest, so a working alternative approach earns its "
       "place even before it is the best. Make targeted changes as SEARCH/REPLACE blocks; do not rewrite whole "
       "files.")
FIX = "The current program failed ({reason}); its output is above. Fix the cause first, then improve it if you can."


def _program_entry(ctx: OpContext, node: Node, current: dict[str, str], kind: str, chars: int) -> str:
    head = f"- node {node.id}{f' ({kind})' if kind else ''}: {prompts.result_line(ctx, node)}; plan: " \
           f"{summarize(node.plan, 300) or '(the baseline)'}"
    diff = unified_diff(current, ctx.store.files(node))
    if not chars:
        return head
    return f"{head}\n  how it differs from the current program (- current, + node {node.id}; {diff_stats(diff)}):" \
           f"\n```diff\n{head_lines(diff, chars) or '(identical)'}\n```"


def _programs_section(ctx: OpContext, title: str, entries: list[list[str]], current: dict[str, str],
                      priority: int, shown: set[str]) -> Section:
    """Programs as diffs against the current one; a program already shown above gets its head line only."""
    nodes = [(ctx.store.get(i), kind, i in shown) for i, kind in entries if i in ctx.store]
    shown.update(i for i, _ in entries)
    variants = ["\n".join(_program_entry(ctx, n, current, k, 0 if seen else c) for n, k, seen in nodes)
                for c in (4000, 1200, 0)]
    return Section(title, variants if nodes else [""], priority)


def _learn_from(sources: list[str]) -> str:
    """Name only the context sections this prompt holds: an early prompt has no other programs to learn from."""
    if not sources:
        return "No other program has been tried yet: this is the first evolution of this island."
    listed = sources[0] if len(sources) == 1 else ", ".join(sources[:-1]) + " and " + sources[-1]
    return f"Learn from {listed} above."


def build_messages(ctx: OpContext, parent: Node, action: Action, cfg: OpenEvolveConfig) -> list[dict[str, str]]:
    hints, files = action.hints, ctx.store.files(parent)
    island = hints.get("island", 0)
    previous = [n for n in ctx.store if n.step > 0 and n.hints.get("island") == island][-3:]
    lines = [f"- node {n.id}, evolved from {n.parents[0]}: {prompts.result_line(ctx, n)}; "
             f"{summarize(n.plan, 300) or '(no plan)'}" for n in previous[::-1]]
    job = FIX.format(reason=parent.bug_reason or "error") + " " if parent.executed and parent.status != OK else ""
    present = [name for name, there in (("the previous attempts", lines), ("the top programs", hints.get("top")),
                                        ("the diverse programs", hints.get("diverse")),
                                        ("the inspirations", hints.get("inspirations"))) if there]
    job += JOB.format(metric=ctx.task.metric.name, direction=ctx.task.metric.direction, learn=_learn_from(present))
    drawn = {"explore": "drawn uniformly from the island", "exploit": "an elite from the archive",
             "weighted": "drawn in proportion to fitness", "best": "the best program overall: the island is empty"}
    where = f"Island {island} of {cfg.num_islands}; the current program is {drawn.get(hints.get('mode'), 'given')}."
    shown: set[str] = {parent.id}
    sections = [prompts.task_section(ctx), prompts.setup_section(ctx),
                prompts.harness_section(ctx),
                prompts.data_section(ctx, cfg, priority=40),
                Section(f"Previous attempts on island {island} (newest first)", ["\n".join(lines) or "(none yet)"], 70),
                _programs_section(ctx, "Top programs", [[i, ""] for i in hints.get("top", [])], files, 65, shown),
                _programs_section(ctx, "Diverse programs", [[i, ""] for i in hints.get("diverse", [])], files, 45, shown),
                _programs_section(ctx, "Inspirations", hints.get("inspirations", []), files, 55, shown),
                prompts.solution_section(ctx, parent, cfg, f"Current program (node {parent.id}; edit this). {where}"),
                Section("Your job", [f"{job}\n\n{prompts.RESPONSE}\n\n{format_instructions(cfg.edit_format)}"], 100)]
    return [{"role": "system", "content": prompts.SYSTEM},
            {"role": "user", "content": assemble(sections, cfg.prompt_chars)}]


def evolve(ctx: OpContext, parents: list[Node], action: Action, cfg: OpenEvolveConfig) -> Proposal:
    """OpenEvolve's diff-based mutation of one parent, with the island's programs as context."""
    return operators.propose(ctx, ctx.store.files(parents[0]), build_messages(ctx, parents[0], action, cfg),
                             "evolve", cfg)


def build(cfg: OpenEvolveConfig, task: TaskSpec) -> Agent:
    return Agent(policy=OpenEvolvePolicy(cfg, task.metric),
                 operators={"evolve": lambda ctx, parents, action: evolve(ctx, parents, action, cfg)})


@hookimpl
def researchbench_register_agents(register: Callable[[AgentSpec], None]) -> None:
    register(AgentSpec(name="openevolve", config_class=OpenEvolveConfig, build=build, uses_llm=True,
                       description="LLM: OpenEvolve - MAP-Elites islands, archive, 20/70/10 parents, diffs, migration"))
