"""AdaptiveSearch on hand-built trees: the phase switch (reachable at the task's default budget),
branch counts and forks, round-robin branches with autoresearch semantics, rules A and B, state."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from researchbench.agents.adaptivesearch import AdaptiveSearchConfig, AdaptiveSearchPolicy, displacement_stats, embed
from researchbench.agents.kit.tree import ROOT
from researchbench.benchmark.plugins.manager import get_registry
from researchbench.benchmark.tasks.manifest import Budget, load_task
from trees import Tree

CODE = "def predict(x):\n    return model.fit(x, y).predict(x)\n"


def _task(steps: int | None = None):
    task = load_task(get_registry().tasks["causality"])
    return task if steps is None else replace(task, budget=replace(task.budget, steps=steps))


def _policy(tree: Tree, steps: int | None = None, **cfg) -> AdaptiveSearchPolicy:
    task = _task(steps)
    policy = AdaptiveSearchPolicy(AdaptiveSearchConfig(**cfg), replace(task, metric=tree.store.metric))
    return policy


def _step(policy: AdaptiveSearchPolicy, tree: Tree, score, code: str = CODE):
    """Take the next action, finish it with ``score`` and ``code``, let the policy observe it."""
    action = policy.next_action(tree.store, random.Random(0))
    node = tree.add(action.operator, action.parents, score, hints=action.hints)
    node.files = {"model.py": tree.store.blobs.put(code)}
    policy.observe(node, tree.store)
    return action, node


def test_window_scales_with_the_budget_so_phase_two_is_reachable(tmp_path) -> None:
    tree = Tree(tmp_path)
    assert _task().budget.steps == 10  # the causality task's default budget
    assert _policy(tree).window == 2
    assert _policy(tree, steps=50).window == 12  # FML-bench's 50 would never fire at 50 steps
    assert _policy(tree, steps=400).window == 50  # large budgets get FML-bench's window


def test_phase_two_starts_at_the_default_budget_when_progress_stalls(tmp_path) -> None:
    tree = Tree(tmp_path)  # lower is better, baseline 3.0
    policy = _policy(tree)  # 10 experiments, W = 2
    _, good = _step(policy, tree, 2.0)
    _step(policy, tree, 1.9)  # still improving over the last 2
    assert policy.phase == 1
    _step(policy, tree, 2.5)
    assert policy.phase == 1  # curve[3] - curve[1] = the 1.9 keep: not flat yet
    _, flat = _step(policy, tree, 2.6)
    assert policy.phase == 2 and policy.switched_at == 4
    assert policy.forks == ["0002"]  # 6 experiments left: one branch, from the best kept node
    action = policy.next_action(tree.store, random.Random(0))
    assert (action.operator, action.parents) == ("improve", ("0002",))
    assert action.hints == {"lane": "b0", "fork": "0002", "first": True}


def test_branch_count_follows_experiments_left_and_forks_fill_with_the_baseline(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = _policy(tree, steps=40)
    assert [policy.branch_count(n) for n in (1, 3, 4, 15, 16, 30, 31)] == [0, 0, 1, 1, 2, 2, 3]
    policy = _policy(tree, steps=40, p1_window=2)
    for score in (2.0, 2.5, 2.6):
        _step(policy, tree, score)
    assert policy.phase == 2 and policy.forks == ["0001", ROOT, ROOT]  # 37 left: three, one kept node
    lanes = [policy.next_action(tree.store, random.Random(0)).hints["lane"] for _ in range(4)]
    assert lanes == ["b0", "b1", "b2", "b0"]  # round-robin


def test_too_few_experiments_left_stay_in_phase_one(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = _policy(tree, steps=5)
    for score in (3.5, 3.5):
        _step(policy, tree, score)
    assert policy.switched_at == 2 and policy.phase == 1  # 3 left: the switch fired, no branch fits
    assert policy.next_action(tree.store, random.Random(0)).hints == {"lane": "p1"}


def test_branches_hill_climb_and_fix_crashes_on_their_turn(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = _policy(tree, steps=40, p1_window=2)
    for score in (2.0, 2.5, 2.6):
        _step(policy, tree, score)
    _, b0 = _step(policy, tree, 1.8)  # b0 from 0001: kept
    _, b1 = _step(policy, tree, None)  # b1 from the baseline: a crash
    _step(policy, tree, 2.9)  # b2
    action, _ = _step(policy, tree, 1.9)  # b0's turn: from its kept node; 1.9 is discarded
    assert action.parents == (b0.id,) and action.hints["lane"] == "b0"
    action = policy.next_action(tree.store, random.Random(0))
    assert (action.operator, action.parents, action.hints["lane"]) == ("debug", (b1.id,), "b1")


def test_displacement_reach_and_effective_dimension() -> None:
    base = embed({"m.py": "a b c d"})
    one_way = [embed({"m.py": "a b c d e"}), embed({"m.py": "a b c d e e"})]
    reach, effdim = displacement_stats(base, one_way)
    assert reach == pytest.approx(2 / 2) and effdim == pytest.approx(1.0)  # one direction; ||base|| = 2
    two_ways = [embed({"m.py": "a b c d e"}), embed({"m.py": "a b c d f"})]
    assert displacement_stats(base, two_ways)[1] == pytest.approx(2.0)


def test_rules_a_and_b_steer_a_stuck_branch(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = _policy(tree, steps=40, p1_window=2, min_history=3, b_freq_window=3, b_freq_max=1)
    long_code = CODE * 20
    for score in (2.0, 2.5, 2.6):
        _step(policy, tree, score, long_code)
    policy.forks = ["0001"]  # one branch from 0001
    for k in range(3):  # small, same-direction tweaks, none kept: reach tiny, one direction
        _step(policy, tree, 2.1, long_code + "x = 1\n" * (k + 1))
    assert policy.next_action(tree.store, random.Random(0)).hints["guide"] == "deeper"
    for extra in ("alpha = 2\n", "beta = gamma(3)\n", "delta.eps(4)\n"):  # scattered directions
        _step(policy, tree, 2.1, long_code + extra)
    assert policy.next_action(tree.store, random.Random(0)).hints["guide"] == "consolidate"
    policy.cfg.a_reach_norm_max = 0.0
    assert policy.next_action(tree.store, random.Random(0)).hints["guide"] == "coherent"


def test_state_round_trips_through_json(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = _policy(tree, steps=40, p1_window=2)
    for score in (2.0, 2.5, 2.6, 1.0):
        _step(policy, tree, score)
    twin = _policy(tree, steps=40, p1_window=2)
    twin.load_state_dict(json.loads(json.dumps(policy.state_dict())))
    assert twin.state_dict() == policy.state_dict()
    assert twin.next_action(tree.store, random.Random(1)) == policy.next_action(tree.store, random.Random(1))


def test_a_branch_first_idea_that_never_ran_is_asked_again_as_a_first_idea(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = _policy(tree, steps=10)
    for score in (2.0, 2.5, 2.6):
        _step(policy, tree, score)
    action = policy.next_action(tree.store, random.Random(0))
    assert action.hints["first"]
    tree.claim(action.operator, action.parents, action.hints)
    assert "first" not in policy.next_action(tree.store, random.Random(0)).hints  # in flight: not first again
    tree.store._pending.clear()
    tree.failed_edit(action.operator, action.parents).hints = dict(action.hints)
    assert policy.next_action(tree.store, random.Random(0)).hints["first"]
