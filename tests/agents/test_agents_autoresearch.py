"""autoresearch's keep/discard hill climb on hand-built trees: a result is kept only when strictly
better than the incumbent when it arrives, the next idea starts from the kept best, crashes get a
bounded chain of fixes, and claims in flight are honoured."""

from __future__ import annotations

import random

from researchbench.agents.autoresearch import CRASH, DISCARD, KEEP, MAIN, AutoresearchConfig, AutoresearchPolicy, replay
from researchbench.agents.kit.tree import ROOT
from trees import Tree


def _next(policy: AutoresearchPolicy, tree: Tree):
    action = policy.next_action(tree.store, random.Random(0))
    return action.operator, action.parents


def _add(tree: Tree, action_parents: tuple[str, ...], score, operator: str = "improve"):
    return tree.add(operator, action_parents, score, hints={"lane": MAIN})


def test_worse_or_equal_results_are_discarded_and_the_next_idea_starts_from_the_kept_best(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AutoresearchPolicy(AutoresearchConfig())  # lower is better, baseline 3.0
    assert _next(policy, tree) == ("improve", (ROOT,))
    kept = _add(tree, (ROOT,), 2.0)
    assert _next(policy, tree) == ("improve", (kept.id,))
    worse = _add(tree, (kept.id,), 2.5)
    equal = _add(tree, (kept.id,), 2.0)  # not strictly better: discarded too
    assert _next(policy, tree) == ("improve", (kept.id,))
    better = _add(tree, (kept.id,), 1.5)
    lane = replay(tree.store, {MAIN: ROOT})[MAIN]
    assert lane.rows == [(kept.id, KEEP), (worse.id, DISCARD), (equal.id, DISCARD), (better.id, KEEP)]
    assert lane.incumbent == better.id and _next(policy, tree) == ("improve", (better.id,))


def test_results_are_judged_against_the_incumbent_when_they_arrive(tmp_path) -> None:
    """Two ideas launched from the baseline in parallel: the second to arrive must beat the first."""
    tree = Tree(tmp_path)
    first = _add(tree, (ROOT,), 1.0)
    second = _add(tree, (ROOT,), 2.0)  # better than its parent (3.0), worse than the incumbent (1.0)
    lane = replay(tree.store, {MAIN: ROOT})[MAIN]
    assert lane.rows == [(first.id, KEEP), (second.id, DISCARD)] and lane.incumbent == first.id


def test_a_crash_gets_max_debug_retries_fixes_then_the_line_is_dropped(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AutoresearchPolicy(AutoresearchConfig(max_debug_retries=3))
    kept = _add(tree, (ROOT,), 2.0)
    crash = _add(tree, (kept.id,), None)
    chain = [crash]
    for _ in range(3):
        assert _next(policy, tree) == ("debug", (chain[-1].id,))
        chain.append(_add(tree, (chain[-1].id,), None, "debug"))
    assert _next(policy, tree) == ("improve", (kept.id,))  # three fixes failed: back to the kept best
    assert [s for _, s in replay(tree.store, {MAIN: ROOT})[MAIN].rows] == [KEEP] + [CRASH] * 4


def test_a_fix_is_judged_like_any_experiment(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AutoresearchPolicy(AutoresearchConfig())
    kept = _add(tree, (ROOT,), 2.0)
    crash = _add(tree, (kept.id,), None)
    fixed_but_worse = _add(tree, (crash.id,), 2.2, "debug")
    assert _next(policy, tree) == ("improve", (kept.id,))
    assert replay(tree.store, {MAIN: ROOT})[MAIN].rows[-1] == (fixed_but_worse.id, DISCARD)
    fixed_better = _add(tree, (_add(tree, (kept.id,), None).id,), 1.0, "debug")
    assert _next(policy, tree) == ("improve", (fixed_better.id,))


def test_claims_in_flight_and_unrun_fixes_are_honoured(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AutoresearchPolicy(AutoresearchConfig())
    kept = _add(tree, (ROOT,), 2.0)
    crash = _add(tree, (kept.id,), None)
    tree.claim("debug", (crash.id,), {"lane": MAIN})  # a fix is in flight: do not fix it twice
    assert _next(policy, tree) == ("improve", (kept.id,))
    tree2 = Tree(tmp_path / "b")
    crash2 = _add(tree2, (ROOT,), None)
    tree2.failed_edit("debug", (crash2.id,))
    assert _next(policy, tree2) == ("debug", (crash2.id,))  # one fix that never ran: try again
    tree2.failed_edit("debug", (crash2.id,))
    assert _next(policy, tree2) == ("improve", (ROOT,))  # two never ran: give the crash up


def test_a_crashing_baseline_is_fixed_before_ideas(tmp_path) -> None:
    tree, policy = Tree(tmp_path, baseline=None), AutoresearchPolicy(AutoresearchConfig())
    assert _next(policy, tree) == ("debug", (ROOT,))
    fixed = _add(tree, (ROOT,), 4.0, "debug")  # any score beats a crashed incumbent
    assert _next(policy, tree) == ("improve", (fixed.id,))
