"""AIDE's policy on hand-built trees: budget-scaled drafts, then debug the most promising buggy leaf or
improve the best."""

from __future__ import annotations

import random
from collections import Counter

from researchbench.agents.aide import AideConfig, AidePolicy
from trees import ScriptedRng, Tree


def test_drafts_come_first_and_claims_in_flight_count(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AidePolicy(AideConfig(), 20)
    for _ in range(3):
        tree.add("draft", score=2.0)
    tree.failed_edit("draft", ("0000",))  # never ran: not a draft, so a fourth is still owed
    action = policy.next_action(tree.store, ScriptedRng([]))
    assert (action.operator, action.parents) == ("draft", ("0000",))
    tree.claim("draft", ("0000",))
    tree.claim("draft", ("0000",))  # 3 ran + 2 in flight = 5: no more drafts
    assert policy.next_action(tree.store, ScriptedRng([0.9])).operator == "improve"


def test_after_drafts_debug_the_most_promising_leaf_with_probability_else_improve_the_best(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AidePolicy(AideConfig(), 20)
    bug_a = tree.add("draft", score=None)
    good = tree.add("draft", score=1.5)
    tree.add("draft", score=2.5)
    tree.add("draft", score=None)
    tree.add("draft", score=4.0)
    # below debug_prob: of two failed drafts (same idea: the baseline, same depth, same cost) the earlier
    assert policy.next_action(tree.store, ScriptedRng([0.49])).parents == (bug_a.id,)
    # a failed improvement of the best node (1.5, lower is better) outranks drafts from the baseline (3.0)
    promising = tree.add("improve", (good.id,), None)
    action = policy.next_action(tree.store, ScriptedRng([0.49]))
    assert (action.operator, action.parents) == ("debug", (promising.id,))
    # at or above debug_prob: improve the best scored node
    action = policy.next_action(tree.store, ScriptedRng([0.5]))
    assert (action.operator, action.parents) == ("improve", (good.id,))


def test_debug_probability_over_seeds_and_a_fixed_target(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AidePolicy(AideConfig(debug_prob=0.3), 20)
    bugs = [tree.add("draft", score=None).id for _ in range(2)]
    for _ in range(3):
        tree.add("draft", score=2.0)
    picks = Counter()
    for seed in range(3000):
        action = policy.next_action(tree.store, random.Random(seed))
        picks[action.parents[0] if action.operator == "debug" else "improve"] += 1
    assert abs(picks["improve"] / 3000 - 0.7) < 0.03
    assert picks[bugs[1]] == 0 and picks[bugs[0]] + picks["improve"] == 3000


def test_fewer_failed_fixes_then_the_cheaper_run_is_debugged_first(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AidePolicy(AideConfig(num_drafts=1, debug_prob=1.0), 20)
    idea = tree.add("draft", score=2.0)
    slow = tree.add("improve", (idea.id,), None)
    slow.seconds = 500.0  # a timeout, say: its fix costs a whole step limit again
    retried = tree.add("improve", (idea.id,), None)
    second_try = tree.add("debug", (retried.id,), None)  # one failed fix already
    fast = tree.add("improve", (idea.id,), None)
    fast.seconds = 5.0
    assert policy.next_action(tree.store, ScriptedRng([0.0])).parents == (fast.id,)
    tree.claim("debug", (fast.id,))
    assert policy.next_action(tree.store, ScriptedRng([0.0])).parents == (slow.id,)
    tree.claim("debug", (slow.id,))
    assert policy.next_action(tree.store, ScriptedRng([0.0])).parents == (second_try.id,)


def test_only_buggy_leaves_within_depth_are_debugged(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AidePolicy(AideConfig(max_debug_depth=1), 20)
    for _ in range(4):
        tree.add("draft", score=2.0)
    claimed = tree.add("draft", score=None)
    tree.claim("debug", (claimed.id,))  # a debug in flight covers it
    debugged = tree.add("improve", ("0001",), None)
    chain = tree.add("debug", (debugged.id,), None)
    tree.add("debug", (chain.id,), None)  # depth 2: too deep
    shallow_root = tree.add("improve", ("0002",), None)
    shallow = tree.add("debug", (shallow_root.id,), None)  # depth 1: allowed (AIDE checks <=)
    unrun = tree.add("improve", ("0003",), None)
    tree.failed_edit("debug", (unrun.id,))  # an unrun child does not make it a non-leaf
    debug_now = ScriptedRng([0.0])
    assert policy.next_action(tree.store, debug_now).parents == (unrun.id,)  # depth 0 before depth 1
    tree.claim("debug", (unrun.id,))
    assert policy.next_action(tree.store, ScriptedRng([0.0])).parents == (shallow.id,)
    tree.claim("debug", (shallow.id,))
    assert policy.next_action(tree.store, ScriptedRng([0.0])).operator == "improve"  # nothing else qualifies


def test_drafts_scale_with_the_budget_and_an_explicit_setting_wins(tmp_path) -> None:
    assert [AidePolicy(AideConfig(), steps).num_drafts for steps in (3, 8, 10, 12, 20, 50)] == [1, 2, 2, 3, 5, 5]
    assert AidePolicy(AideConfig(num_drafts=4), 8).num_drafts == 4
    tree, policy = Tree(tmp_path), AidePolicy(AideConfig(), 8)
    failed = tree.add("draft", score=None)
    tree.add("draft", score=2.0)
    # two drafts for 8 experiments; the failed one is fixed rather than a third idea drafted
    action = policy.next_action(tree.store, ScriptedRng([0.0]))
    assert (action.operator, action.parents) == ("debug", (failed.id,))


def test_no_scored_node_means_draft_again(tmp_path) -> None:
    tree, policy = Tree(tmp_path, baseline=None), AidePolicy(AideConfig(num_drafts=1, debug_prob=0.0), 20)
    tree.add("draft", score=None)
    assert policy.next_action(tree.store, ScriptedRng([0.1])).operator == "draft"
