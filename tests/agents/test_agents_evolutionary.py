"""AIRA's evolutionary search on hand-built trees: islands, softmax sampling, admission, crossover,
migration, debug of offspring, and JSON state."""

from __future__ import annotations

import json
import math
import random
from collections import Counter

import pytest

from researchbench.agents.evolutionary import EvolutionaryConfig, EvolutionaryPolicy, softmax_choice
from trees import Tree


def _policy(tree: Tree, budget_steps: int = 40, **cfg) -> EvolutionaryPolicy:
    return EvolutionaryPolicy(EvolutionaryConfig(**cfg), tree.store.metric, budget_steps)


def _finish(policy: EvolutionaryPolicy, tree: Tree, score: float | None, rng: random.Random):
    action = policy.next_action(tree.store, rng)
    node = tree.add(action.operator, action.parents, score, hints=action.hints)
    policy.observe(node, tree.store)
    return action, node


def test_softmax_choice_follows_temperature() -> None:
    rng = random.Random(0)
    counts = Counter(softmax_choice(rng, [0.0, 1.0], 1.0)[0] for _ in range(20000))
    assert counts[1] / 20000 == pytest.approx(math.e / (1 + math.e), abs=0.015)
    counts = Counter(softmax_choice(rng, [0.0, 1.0], 0.1)[0] for _ in range(5000))
    assert counts[1] / 5000 > 0.99
    assert sorted(softmax_choice(rng, [0.2, 0.5, 0.9], 1.0, k=3)) == [0, 1, 2]  # without replacement


def test_generation_zero_drafts_then_seeds_islands_and_debugs_failures(tmp_path) -> None:
    tree, rng = Tree(tmp_path), random.Random(3)
    policy = _policy(tree, num_islands=2, individuals_per_generation=3)
    a1, n1 = _finish(policy, tree, 2.0, rng)
    a2, n2 = _finish(policy, tree, None, rng)
    assert [a.operator for a in (a1, a2)] == ["draft", "draft"] and a1.tag == "gen:0#1"
    a3, n3 = _finish(policy, tree, 1.0, rng)  # the failure is debugged first, on its island
    assert (a3.operator, a3.parents, a3.hints) == ("debug", (n2.id,), a2.hints)
    a4, n4 = _finish(policy, tree, 4.0, rng)
    assert a4.operator == "draft" and policy.generation == 0
    action = policy.next_action(tree.store, rng)  # generation 1: gen 0 is admitted unconditionally
    assert policy.generation == 1 and action.operator == "improve"
    placed = {i: island for island, members in enumerate(policy.islands) for i in members}
    assert placed == {n1.id: a1.hints["island"], n3.id: a2.hints["island"], n4.id: a4.hints["island"]}
    assert n2.id not in placed  # a buggy child never joins; its fix does
    assert (policy.gmin, policy.gmax) == (1.0, 4.0)


def test_admission_by_island_average_and_size_cap(tmp_path) -> None:
    tree, rng = Tree(tmp_path), random.Random(0)  # lower is better
    policy = _policy(tree, num_islands=1, max_island_size=3, migration_prob=0.0)
    members = [tree.add("draft", score=s) for s in (1.0, 2.0, 3.0)]
    policy.islands, policy.generation, policy.started = [[m.id for m in members]], 1, True
    policy.gmin, policy.gmax = 1.0, 3.0
    worse = tree.add("improve", (members[0].id,), 2.5, hints={"island": 0})  # average 2.0: rejected
    better = tree.add("improve", (members[0].id,), 1.5, hints={"island": 0})  # accepted, evicts the 3.0
    for node in (worse, better):
        policy.observe(node, tree.store)
    policy.admit(tree.store, rng)
    assert sorted(policy.islands[0]) == sorted([members[0].id, members[1].id, better.id])
    assert policy.offspring == []


def test_crossover_takes_two_distinct_parents_from_one_island(tmp_path) -> None:
    tree, rng = Tree(tmp_path), random.Random(5)
    policy = _policy(tree, num_islands=2, crossover_prob=1.0, num_generations_till_crossover=2)
    policy.islands = [[tree.add("draft", score=s).id for s in (1.0, 2.0)], [tree.add("draft", score=3.0).id]]
    policy.gmin, policy.gmax, policy.generation = 1.0, 3.0, 2
    for _ in range(50):
        action = policy.sample(tree.store, rng, "t")
        assert action.operator == "crossover" and len(set(action.parents)) == 2
        assert set(action.parents) <= set(policy.islands[action.hints["island"]])
    policy.generation = 1  # before num_generations_till_crossover: mutation only
    assert policy.sample(tree.store, rng, "t").operator == "improve"


def test_migration_resets_weak_islands_to_best_plus_a_migrant(tmp_path) -> None:
    tree, rng = Tree(tmp_path), random.Random(0)
    policy = _policy(tree, num_islands=2)
    strong = [tree.add("draft", score=s).id for s in (1.0, 1.5, 2.0)]
    weak = [tree.add("draft", score=s).id for s in (3.0, 4.0)]
    policy.islands, policy.gmin, policy.gmax = [list(weak), list(strong)], 1.0, 4.0
    policy.migrate(tree.store, rng)
    assert policy.islands[0][0] == weak[0] and len(policy.islands[0]) == 2
    migrant = policy.islands[0][1]
    assert migrant in strong[1:] and migrant not in policy.islands[1]  # moved, never the strong best
    assert strong[0] in policy.islands[1]


def test_state_round_trips_through_json(tmp_path) -> None:
    tree, rng = Tree(tmp_path), random.Random(2)
    policy = _policy(tree)
    for score in (2.0, None, 1.0):
        _finish(policy, tree, score, rng)
    twin = _policy(tree)
    twin.load_state_dict(json.loads(json.dumps(policy.state_dict())))
    assert twin.state_dict() == policy.state_dict()
    assert twin.next_action(tree.store, random.Random(9)) == policy.next_action(tree.store, random.Random(9))


def test_population_follows_a_small_budget(tmp_path) -> None:
    tree = Tree(tmp_path)
    sizes = [(p.individuals, p.num_islands, p.num_generations) for p in (_policy(tree, s) for s in (3, 8, 12, 40))]
    assert sizes == [(1, 1, 3), (2, 2, 4), (3, 2, 4), (4, 2, 10)]  # two islands from 8
    explicit = _policy(tree, 8, individuals_per_generation=4, num_islands=3, num_generations=7)
    assert (explicit.individuals, explicit.num_islands, explicit.num_generations) == (4, 3, 7)
    rng, policy = random.Random(0), _policy(tree, 8)
    actions = [_finish(policy, tree, score, rng)[0] for score in (2.0, 1.0, 1.5)]
    assert [a.operator for a in actions] == ["draft", "draft", "improve"]  # gen 0 is 2 of 8, not 4
    assert len(policy.islands) == 2 and policy.generation == 1


def test_crossover_never_pairs_a_node_with_its_ancestor_or_a_pair_crossed_before(tmp_path) -> None:
    """Issue 27: a crossover paired a node with its own parent, and a pair already crossed was queued again."""
    tree, rng = Tree(tmp_path), random.Random(3)
    policy = _policy(tree, num_islands=1, crossover_prob=1.0, num_generations_till_crossover=0)
    a = tree.add("draft", score=1.0)
    child = tree.add("improve", (a.id,), 1.5)
    b = tree.add("draft", score=2.0)
    policy.islands, policy.gmin, policy.gmax, policy.generation = [[a.id, child.id, b.id]], 1.0, 2.0, 1
    pairs = [set(x.parents) for x in (policy.sample(tree.store, rng, "t") for _ in range(60)) if x.operator == "crossover"]
    assert pairs and {a.id, child.id} not in pairs
    tree.add("crossover", (a.id, b.id), 1.2)
    tree.add("crossover", (child.id, b.id), 1.3)
    for _ in range(30):  # every fresh pair is used up: mutation instead
        assert policy.sample(tree.store, rng, "t").operator == "improve"


def test_a_generation_never_queues_the_same_crossover_twice(tmp_path) -> None:
    tree, rng = Tree(tmp_path), random.Random(1)
    policy = _policy(tree, num_islands=1, individuals_per_generation=4, crossover_prob=1.0,
                     num_generations_till_crossover=0)
    members = [tree.add("draft", score=s).id for s in (1.0, 2.0, 3.0)]
    policy.islands, policy.gmin, policy.gmax, policy.generation, policy.started = [members], 1.0, 3.0, 1, True
    crosses = [frozenset(x.parents) for x in policy.plan_generation(tree.store, rng) if x.operator == "crossover"]
    assert crosses and len(crosses) == len(set(crosses))
