"""AIRA's MCTS on hand-built trees: UCT arithmetic, expansion, backprop, debug chains, claims, state."""

from __future__ import annotations

import json
import math
import random

import pytest

from researchbench.agents.mcts import MctsConfig, MctsPolicy
from trees import Tree


def _policy(tree: Tree, budget_steps: int = 40, **cfg) -> MctsPolicy:
    return MctsPolicy(MctsConfig(**cfg), tree.store.metric, budget_steps)


def _run(policy: MctsPolicy, tree: Tree, score: float | None):
    """Take the next action, finish it with ``score`` (None = buggy), and let the policy observe it."""
    action = policy.next_action(tree.store, random.Random(0))
    node = tree.add(action.operator, action.parents, score)
    policy.observe(node, tree.store)
    return action, node


def test_uct_is_normalised_q_plus_exploration(tmp_path) -> None:
    tree = Tree(tmp_path)  # lower is better
    policy = _policy(tree, uct_c=0.25)
    policy.visits = {"0000": 3, "a": 2, "b": 1}
    policy.value = {"0000": 4.0, "a": 3.0, "b": 1.0}
    policy.gmin, policy.gmax = 1.0, 2.0
    # a: Q = 1.5 -> 0.5 of the range -> 0.5 after flipping; b: Q = 1.0 -> best -> 1.0
    assert policy.uct("a", "0000") == pytest.approx(0.5 + 0.25 * math.sqrt(math.log(3) / 2))
    assert policy.uct("b", "0000") == pytest.approx(1.0 + 0.25 * math.sqrt(math.log(3) / 1))
    assert policy.uct("unvisited", "0000") == -1e8
    higher = MctsPolicy(MctsConfig(uct_c=0.0), Tree(tmp_path / "h", direction="higher").store.metric, 40)
    higher.visits, higher.value, higher.gmin, higher.gmax = {"a": 2}, {"a": 3.0}, 1.0, 2.0
    assert higher.uct("a", "0000") == pytest.approx(0.5)


def test_root_gets_num_children_drafts_then_the_best_child_is_expanded(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = _policy(tree, num_children=3)
    drafts = [_run(policy, tree, score) for score in (2.0, 1.0, 3.0)]
    assert [(a.operator, a.parents, a.tag) for a, _ in drafts] == [
        ("draft", ("0000",), f"expand:0000#{k}") for k in (1, 2, 3)]
    assert policy.visits["0000"] == 3 and policy.value["0000"] == pytest.approx(6.0)
    assert (policy.gmin, policy.gmax) == (1.0, 3.0)
    best_draft = drafts[1][1]
    action, child = _run(policy, tree, 0.5)  # selection: the lowest score has the highest UCT
    assert (action.operator, action.parents) == ("improve", (best_draft.id,))
    assert policy.visits[best_draft.id] == 2 and policy.value[best_draft.id] == pytest.approx(1.5)
    assert policy.visits["0000"] == 4 and policy.visits[child.id] == 1


def test_debug_chain_backs_up_only_when_fixed(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = _policy(tree, num_children=2, max_debug_depth=3)
    _, bug = _run(policy, tree, None)
    action, bug2 = _run(policy, tree, None)  # the debug goes first, before the second draft
    assert (action.operator, action.parents) == ("debug", (bug.id,))
    assert bug.id not in policy.visits and policy.n("0000") == 0
    action, fixed = _run(policy, tree, 1.2)
    assert (action.operator, action.parents) == ("debug", (bug2.id,))
    # the fix backs its value up through the whole chain: root, failed draft, failed debug, fix
    for node_id in ("0000", bug.id, bug2.id, fixed.id):
        assert policy.visits[node_id] == 1 and policy.value[node_id] == pytest.approx(1.2)
    action, _ = _run(policy, tree, 2.0)
    assert (action.operator, action.tag) == ("draft", "expand:0000#2")
    # selection now walks through the fixed chain to its end: improve the fix
    action, _ = _run(policy, tree, 1.0)
    assert (action.operator, action.parents) == ("improve", (fixed.id,))


def test_unfixed_chain_stops_at_max_depth_and_stays_unvisited(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = _policy(tree, num_children=1, max_debug_depth=2)
    operators = [_run(policy, tree, None)[0].operator for _ in range(3)]
    assert operators == ["draft", "debug", "debug"]
    assert policy.agenda == [] and policy.visits == {}
    action = policy.next_action(tree.store, random.Random(0))  # no visited child: the root again
    assert (action.operator, action.parents) == ("draft", ("0000",))


def test_claimed_leaves_are_not_expanded_twice(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = _policy(tree, num_children=1)
    _, a = _run(policy, tree, 1.0)
    queued = policy.next_action(tree.store, random.Random(0))  # selects a: improve a
    assert queued.parents == (a.id,)
    tree.claim(queued.operator, queued.parents)  # in flight now
    # a is claimed; the root's only visited child is a, so nothing is free: improve the best meanwhile
    action = policy.next_action(tree.store, random.Random(0))
    assert action.operator == "improve" and action.tag.startswith("improve:") and policy.agenda == []
    b = tree.add("draft", ("0000",), 2.0)
    policy.observe(b, tree.store)
    action = policy.next_action(tree.store, random.Random(0))  # b is the free leaf now
    assert action.parents == (b.id,)


def test_state_round_trips_through_json(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = _policy(tree, num_children=3)
    _run(policy, tree, 2.0)
    _run(policy, tree, None)
    state = json.loads(json.dumps(policy.state_dict()))
    twin = _policy(tree, num_children=3)
    twin.load_state_dict(state)
    assert twin.state_dict() == policy.state_dict()
    assert twin.next_action(tree.store, random.Random(1)) == policy.next_action(tree.store, random.Random(1))


def test_expansion_width_follows_a_small_budget(tmp_path) -> None:
    tree = Tree(tmp_path)
    assert [_policy(tree, steps).num_children for steps in (3, 8, 12, 40)] == [1, 2, 3, 3]
    assert _policy(tree, 8, num_children=5).num_children == 5  # an explicit setting is used as given
    policy = _policy(tree, 8)
    drafts = [_run(policy, tree, score) for score in (2.0, 1.0)]
    assert [a.operator for a, _ in drafts] == ["draft", "draft"]
    action, _ = _run(policy, tree, 0.5)  # the third experiment already builds on the best draft
    assert (action.operator, action.parents) == ("improve", (drafts[1][1].id,))
