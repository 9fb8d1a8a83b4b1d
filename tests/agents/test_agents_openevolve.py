"""OpenEvolve on hand-built stores: cell replacement, the archive, 20/70/10 parent sampling, inspirations,
migration, the baseline seeded once, JSON state; then end to end on causality and a SIGKILL resume."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from researchbench.agents.openevolve import OpenEvolveConfig, OpenEvolvePolicy, code_distance, code_stats
from researchbench.benchmark.records.journal import Node
from conftest import FIXTURES, finished_at_least, journal_records, kill_run_when, run_inprocess
from trees import Tree


def _policy(tree: Tree, **cfg) -> OpenEvolvePolicy:
    return OpenEvolvePolicy(OpenEvolveConfig(**cfg), tree.store.metric)


def _program(tree: Tree, score: float | None, code: str, island: int = 0) -> Node:
    """A finished node whose model.py is `code` (the features come from the files)."""
    node = tree.add("evolve", ("0000",), score, hints={"island": island})
    node.files = {"model.py": tree.store.blobs.put(code)}
    return node


def test_fast_code_diversity_is_openevolves_formula() -> None:
    a, b = code_stats({"m.py": "ab\ncd"}), code_stats({"m.py": "abx"})
    assert code_distance(a, b) == pytest.approx(0.1 * 2 + 10 * 1 + 0.5 * len({"c", "d", "\n", "x"}))


def test_a_fitter_program_takes_the_cell_and_a_worse_one_does_not(tmp_path) -> None:
    tree = Tree(tmp_path)  # lower is better
    policy = _policy(tree, feature_bins=1)  # one cell per island: every program competes for it
    policy.add(tree.store, "0000", 0)
    better, worse = _program(tree, 1.0, "x = 1\n"), _program(tree, 4.0, "x = 2\n")
    policy.add(tree.store, better.id, 0)
    assert policy.grids[0] == {"0-0": better.id} and "0000" not in policy.islands[0]  # displaced: leaves the island
    policy.add(tree.store, worse.id, 0)
    assert policy.grids[0] == {"0-0": better.id}
    assert worse.id in policy.islands[0]  # a program that loses its cell still joins the island
    buggy = _program(tree, None, "x = 3\n")
    policy.add(tree.store, buggy.id, 0)
    assert policy.grids[0] == {"0-0": better.id} and buggy.id not in policy.archive  # a failed run is no elite


def test_archive_keeps_the_fittest(tmp_path) -> None:
    tree = Tree(tmp_path, direction="higher", baseline=1.0)
    policy = _policy(tree, archive_size=2)
    for score in (3.0, 2.0, 5.0, 0.5):
        policy.add(tree.store, _program(tree, score, f"y = {score}\n").id, 0)
    assert sorted(tree.store.get(a).primary for a in policy.archive) == [3.0, 5.0]


def test_parent_sampling_is_20_70_10_with_inspirations_from_the_island(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = _policy(tree, num_islands=1, num_inspirations=2)
    policy.seeded = True
    members = [_program(tree, s, f"z = {s}\n" + "#" * int(s * 40)) for s in (1.0, 2.0, 3.0, 4.0)]
    for node in members:
        policy.add(tree.store, node.id, 0)
    policy.archive = [members[0].id]  # one elite, so exploitation is recognisable
    rng, draws = random.Random(7), 20000
    modes = Counter(policy.sample(tree.store, rng, 0)[1] for _ in range(draws))
    assert modes["explore"] / draws == pytest.approx(0.2, abs=0.015)
    assert modes["exploit"] / draws == pytest.approx(0.7, abs=0.015)
    assert modes["weighted"] / draws == pytest.approx(0.1, abs=0.015)
    weights = policy.weights(tree.store, [m.id for m in members] + ["0000"])
    assert weights[0] == 1.0 and weights[3] == 0.001 and weights[0] > weights[1] > weights[2] > weights[3]
    for _ in range(20):
        action = policy.next_action(tree.store, rng)
        inspirations = [i for i, _ in action.hints["inspirations"]]
        assert len(inspirations) == 2 and action.parents[0] not in inspirations
        assert set(inspirations) <= set(policy.islands[0])
        assert action.hints["top"] == [i for i in policy.ranked(tree.store, policy.islands[0])
                                       if i != action.parents[0]][:3]


def test_baseline_is_seeded_once_and_islands_take_turns(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy, rng = _policy(tree, num_islands=3), random.Random(0)
    actions = [policy.next_action(tree.store, rng) for _ in range(4)]
    assert policy.programs == ["0000"] and policy.islands == [["0000"], [], []]
    assert [a.hints["island"] for a in actions] == [0, 1, 2, 0]
    assert actions[1].parents == ("0000",) and actions[1].hints["mode"] == "best"  # an empty island starts from the best
    child = tree.add("evolve", actions[1].parents, 2.0, hints=actions[1].hints)
    policy.observe(child, tree.store)
    assert child.id in policy.islands[1] and child.id not in policy.islands[0]  # the child lands on its own island
    unrun = tree.failed_edit("evolve", ("0000",))
    unrun.hints = {"island": 2}
    policy.observe(unrun, tree.store)
    assert policy.islands[2] == [] and policy.generations == [0, 1, 0]


def test_migration_copies_each_islands_best_to_its_ring_neighbours(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = _policy(tree, num_islands=3, migration_interval=2, migration_rate=0.1)
    policy.cell = lambda store, node_id: node_id  # a cell per program: nothing is displaced here
    best = [_program(tree, s, f"w = {s}\n" * (k + 1), island=k) for k, s in enumerate((1.0, 2.0, 3.0))]
    for k, node in enumerate(best):
        policy.add(tree.store, node.id, k)
    same_code = _program(tree, 2.5, "w = 1.0\n", island=1)  # island 1 already holds island 0's code
    policy.add(tree.store, same_code.id, 1)
    extra = _program(tree, 2.2, "v = 9\n" * 7, island=2)
    policy.observe(extra, tree.store)
    assert policy.migrants == []  # one generation: not yet
    later = _program(tree, 2.9, "u = 8\n" * 9, island=2)
    policy.observe(later, tree.store)
    assert policy.last_migration == 2
    assert best[0].id in policy.islands[2] and best[0].id not in policy.islands[1]  # identical code is not copied
    assert best[1].id in policy.islands[0] and best[1].id in policy.islands[2]
    # island 2 now holds fitter migrants (1.0, 2.0), but only natives migrate: its best native is 2.2
    assert extra.id in policy.islands[0] and extra.id in policy.islands[1] and later.id not in policy.islands[0]
    assert [2, best[0].id] in policy.migrants and [0, extra.id] in policy.migrants


def test_state_round_trips_through_json(tmp_path) -> None:
    tree, rng = Tree(tmp_path), random.Random(1)
    policy = _policy(tree)
    for score in (2.0, 1.0, None):
        action = policy.next_action(tree.store, rng)
        policy.observe(tree.add(action.operator, action.parents, score, hints=action.hints), tree.store)
    copy = _policy(tree)
    copy.load_state_dict(json.loads(json.dumps(policy.state_dict())))
    assert copy.state_dict() == policy.state_dict()
    assert copy.next_action(tree.store, random.Random(9)) == policy.next_action(tree.store, random.Random(9))


@pytest.mark.slow
@pytest.mark.timeout(1800)  # several causality runs; on a loaded machine each takes minutes
def test_openevolve_edits_causality_end_to_end(causality, tmp_path: Path) -> None:
    summary, _ = run_inprocess("agent=openevolve", "task=causality", "budget.steps=3", "budget.step_timeout_s=600",
                               "budget.test_timeout_s=900",
                               f"results_dir={tmp_path}",
                               "llm=scripted", f"llm.script={FIXTURES / 'scripts' / 'causality_openevolve.yaml'}")
    nodes = [r["node"] for r in journal_records(Path(summary["run_dir"])) if r["kind"] == "finished"]
    assert [(n["operator"], n["status"], n["hints"]["island"]) for n in nodes[1:]] == \
        [("evolve", "ok", 0), ("evolve", "buggy", 1), ("evolve", "ok", 2)]
    assert nodes[1]["primary"] < nodes[0]["primary"]  # the T-learner beats the baseline S-learner
    assert nodes[2]["parents"] == nodes[3]["parents"] == ["0001"]  # empty islands evolve the global best
    best = min((n for n in nodes if n["status"] == "ok"), key=lambda n: n["primary"])
    assert summary["steps"]["experiments"] == 3 and summary["best"]["node"] == best["id"] != "0000"
    calls = [c for n in nodes for c in n["llm_calls"]]
    assert len(calls) == 3 and all(c["operator"] == "evolve" and c["prompt_chars"] > 1000 for c in calls)


def _sr(path: str, old: str, new: str) -> str:
    return f"Plan: try it.\n\n{path}\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"


def _run_tree(run_dir: Path) -> list:
    records = [r for r in journal_records(run_dir) if r["kind"] == "finished"]
    return [(r["node"]["id"], r["node"]["parents"], r["node"]["hints"], sorted(r["node"]["files"].items()),
             r["node"]["status"], r["node"]["primary"], r["checkpoint"]["policy"]) for r in records]


def test_killed_openevolve_run_resumes_to_the_same_database(toy, tmp_path: Path) -> None:
    """Islands 1 and 2 start from the global best, island 0 from its own members; after a SIGKILL the
    resumed run rebuilds the same nodes and the same database (grids, archive, migrants) step by step."""
    slope = '  "slope": 1.0'
    replies = [_sr("params.json", slope, '  "slope": 2.0'), _sr("params.json", '  "slope": 2.0', '  "slope": 2.5'),
               _sr("model.py", '    return params["slope"] * x', '    return params["slopes"] * x'),
               _sr("params.json", slope, '  "slope": 3.0'), _sr("params.json", '  "slope": 2.5', '  "slope": 2.9')]
    script = tmp_path / "oe.jsonl"
    script.write_text("".join(json.dumps({"reply": r, "operator": "evolve"}) + "\n" for r in replies))
    args = ["agent=openevolve", "task=toy", "budget.steps=4", "quiet=true", "llm=scripted", f"llm.script={script}",
            "agent.migration_interval=1", "budget.max_unexecuted_in_a_row=3"]
    reference, _ = run_inprocess(*args, f"results_dir={tmp_path / 'reference'}")  # in process: no second CLI start
    ref_dir = Path(reference["run_dir"])
    killed = tmp_path / "killed"
    kill_run_when(killed, args, finished_at_least(3))
    _, output = run_inprocess(*args, f"results_dir={killed}")
    assert "resuming" in output
    (run_dir,) = (killed / "openevolve" / "toy").iterdir()
    assert _run_tree(run_dir) == _run_tree(ref_dir)
    final = _run_tree(ref_dir)[-1][-1]
    assert final["programs"].count("0000") == 1 and final["migrants"]  # seeded once; migration happened


def test_two_in_flight_fill_the_islands_and_spend_the_budget_exactly(toy, tmp_path: Path) -> None:
    replies = [f"Plan: slope {s}.\n\n### FILE: params.json\n```json\n{{\"slope\": {s}}}\n```\n"
               for s in (2, 3, 2.5, 2.8, 3.1)]
    summary, _ = run_inprocess("agent=openevolve", "task=toy", "budget.steps=4", "parallel=2", "agent.edit_format=auto",
                               f"results_dir={tmp_path}", "llm=mock", llm__mock_responses=replies)
    records = journal_records(Path(summary["run_dir"]))
    nodes = [r["node"] for r in records if r["kind"] == "finished"][1:]
    assert summary["steps"]["experiments"] == 4 and all(n["status"] == "ok" for n in nodes)
    assert sorted(n["hints"]["island"] for n in nodes) == [0, 0, 1, 2]
    database = [r for r in records if r["kind"] == "finished"][-1]["checkpoint"]["policy"]
    assert database["programs"] == ["0000"] + [n["id"] for n in nodes]  # every result joined, in arrival order
    assert database["generations"] == [2, 1, 1]


def test_the_evolve_job_names_only_the_program_sections_its_prompt_holds(tmp_path) -> None:
    """A stateless call must not be told to learn from sections it never got (the first prompt has none)."""
    import random as _random

    from researchbench.agents.openevolve import build_messages
    from researchbench.benchmark.contract.agent_api import Action, OpContext
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.tasks.manifest import load_task

    task = load_task(get_registry().tasks["causality"])
    tree = Tree(tmp_path)
    ctx = OpContext(task=task, store=tree.store, llm=None, rng=_random.Random(0), steps_left=5, budget=task.budget,
                    compute_left_s=3000.0)
    cfg = OpenEvolveConfig(data_preview=False)
    baseline = tree.store.get("0000")

    def job(hints: dict) -> str:
        text = build_messages(ctx, baseline, Action("evolve", ("0000",), hints), cfg)[-1]["content"]
        return text.split("# Your job", 1)[1]

    first = job({"island": 0, "mode": "explore", "top": [], "diverse": [], "inspirations": []})
    assert "Learn from" not in first and "first evolution" in first
    child = tree.add("evolve", ("0000",), 2.0)
    child.hints["island"] = 0
    later = job({"island": 0, "mode": "explore", "top": [child.id], "diverse": [], "inspirations": [[child.id, ""]]})
    assert "the previous attempts" in later and "the top programs" in later and "the inspirations" in later
    assert "the diverse programs" not in later
