"""AIDE's policy on hand-built trees: drafts first, then debug a random buggy leaf or improve the best."""

from __future__ import annotations

import random
from collections import Counter

from agents.aide import AideConfig, AidePolicy
from trees import ScriptedRng, Tree


def test_drafts_come_first_and_claims_in_flight_count(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AidePolicy(AideConfig())
    for _ in range(3):
        tree.add("draft", score=2.0)
    tree.failed_edit("draft", ("0000",))  # never ran: not a draft, so a fourth is still owed
    action = policy.next_action(tree.store, ScriptedRng([]))
    assert (action.operator, action.parents) == ("draft", ("0000",))
    tree.claim("draft", ("0000",))
    tree.claim("draft", ("0000",))  # 3 ran + 2 in flight = 5: no more drafts
    assert policy.next_action(tree.store, ScriptedRng([0.9])).operator == "improve"


def test_after_drafts_debug_with_probability_else_improve_the_best(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AidePolicy(AideConfig())
    bug_a = tree.add("draft", score=None)
    good = tree.add("draft", score=1.5)
    tree.add("draft", score=2.5)
    bug_b = tree.add("draft", score=None)
    tree.add("draft", score=4.0)
    # random() below debug_prob: a uniform buggy leaf (scripted index 1 = the second buggy leaf)
    action = policy.next_action(tree.store, ScriptedRng([0.49], [1]))
    assert (action.operator, action.parents) == ("debug", (bug_b.id,))
    action = policy.next_action(tree.store, ScriptedRng([0.49], [0]))
    assert (action.operator, action.parents) == ("debug", (bug_a.id,))
    # at or above debug_prob: improve the best scored node (lower is better here)
    action = policy.next_action(tree.store, ScriptedRng([0.5]))
    assert (action.operator, action.parents) == ("improve", (good.id,))


def test_debug_probability_and_uniform_choice_over_seeds(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AidePolicy(AideConfig(debug_prob=0.3))
    bugs = [tree.add("draft", score=None).id for _ in range(2)]
    for _ in range(3):
        tree.add("draft", score=2.0)
    picks = Counter()
    for seed in range(3000):
        action = policy.next_action(tree.store, random.Random(seed))
        picks[action.parents[0] if action.operator == "debug" else "improve"] += 1
    assert abs(picks["improve"] / 3000 - 0.7) < 0.03
    assert abs(picks[bugs[0]] - picks[bugs[1]]) / 3000 < 0.04


def test_only_buggy_leaves_within_depth_are_debugged(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AidePolicy(AideConfig(max_debug_depth=1))
    for _ in range(4):
        tree.add("draft", score=2.0)
    claimed = tree.add("draft", score=None)
    tree.claim("debug", (claimed.id,))  # a debug in flight covers it
    debugged = tree.add("improve", ("0001",), None)
    chain = tree.add("debug", (debugged.id,), None)
    deep = tree.add("debug", (chain.id,), None)  # depth 2: too deep
    shallow_root = tree.add("improve", ("0002",), None)
    shallow = tree.add("debug", (shallow_root.id,), None)  # depth 1: allowed (AIDE checks <=)
    unrun = tree.add("improve", ("0003",), None)
    tree.failed_edit("debug", (unrun.id,))  # an unrun child does not make it a non-leaf
    candidates = set()
    for seed in range(200):
        action = policy.next_action(tree.store, random.Random(seed))
        if action.operator == "debug":
            candidates.add(action.parents[0])
    assert candidates == {shallow.id, unrun.id}
    assert {claimed.id, debugged.id, chain.id, deep.id}.isdisjoint(candidates)


def test_no_scored_node_means_draft_again(tmp_path) -> None:
    tree, policy = Tree(tmp_path, baseline=None), AidePolicy(AideConfig(num_drafts=1, debug_prob=0.0))
    tree.add("draft", score=None)
    assert policy.next_action(tree.store, ScriptedRng([0.1])).operator == "draft"
