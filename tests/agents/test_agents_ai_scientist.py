"""The AI Scientist v1 and v2 on hand-built trees: ideas first (generated, reflected, judged for
novelty, ranked), v1's bounded per-idea chains from the baseline with notes and ALL_COMPLETED, v2's
stage budgets, batches and stages that start from the previous stage's best."""

from __future__ import annotations

import json
import random
from dataclasses import replace

from researchbench.agents.ai_scientist_v1 import AIScientistV1Config, AIScientistV1Policy, notes_and_edits, select_ideas
from researchbench.agents.ai_scientist_v2 import AIScientistV2Config, AIScientistV2Policy, split_budget
from researchbench.agents.kit.operators import ideate
from researchbench.agents.kit.tree import ROOT
from researchbench.benchmark.contract.agent_api import OpContext
from researchbench.benchmark.llm.accounting import LLMCall
from researchbench.benchmark.plugins.manager import get_registry
from researchbench.benchmark.records.journal import OK
from researchbench.benchmark.tasks.manifest import load_task
from trees import ScriptedRng, Tree


def idea(name: str, i: int = 5, f: int = 5, n: int = 5, novel: bool = True) -> dict:
    return {"Name": name, "Title": name.title(), "Experiment": f"try {name}", "Interestingness": i,
            "Feasibility": f, "Novelty": n, "novel": novel}


def _toy(steps: int = 5):
    task = load_task(get_registry().tasks["toy"])
    return replace(task, budget=replace(task.budget, steps=steps))


# -- ideation ------------------------------------------------------------------------------------------


class FakeLLM:
    def __init__(self, replies: dict[str, list[str]]):
        self.replies, self.seen = replies, []

    def complete(self, messages, operator=""):
        self.seen.append((operator, messages))
        return LLMCall(model="fake", operator=operator, response=self.replies[operator].pop(0), messages=messages)


def _json(name: str, rating: int = 5) -> str:
    return "Thought: ok\n```json\n" + json.dumps({"Name": name, "Title": name, "Experiment": f"do {name}",
                                                  "Interestingness": rating, "Feasibility": 6, "Novelty": 7}) + "\n```"


def test_ideation_reflects_until_done_drops_duplicates_and_judges_novelty(tmp_path) -> None:
    tree = Tree(tmp_path)
    llm = FakeLLM({"ideation": [_json("t_learner"), _json("t_learner", 8) + "\nI am done",  # idea 1: 2 rounds
                                _json("t_learner"), _json("t_learner"), _json("t_learner"),  # a duplicate
                                _json("ridge"), "no json at all", _json("ridge", 9)],
                   "novelty": ["Same as the baseline. Decision: not novel", "New. Decision: novel"]})
    task = _toy()
    ctx = OpContext(task=task, store=tree.store, llm=llm, rng=random.Random(0), steps_left=5, budget=task.budget)
    cfg = AIScientistV1Config(data_preview=False)
    ideas, calls = ideate(ctx, cfg, tree.store.get(ROOT), count=3, reflections=3, novelty_check=True)
    assert [(i["Name"], i["Interestingness"], i["novel"]) for i in ideas] == [("t_learner", 8, False), ("ridge", 9, True)]
    assert [c.operator for c in calls] == ["ideation"] * 8 + ["novelty"] * 2
    reflection = llm.seen[1][1]
    assert reflection[-2]["role"] == "assistant" and "Round 2/3" in reflection[-1]["content"]
    assert "T_Learner" not in llm.seen[5][1][1]["content"] and "t_learner" in llm.seen[5][1][1]["content"]
    assert select_ideas(ideas, cfg) == [ideas[1]]


def test_select_keeps_novel_ideas_best_rated_first() -> None:
    ideas = [idea("a", 3), idea("b", 9, novel=False), idea("c", 7), idea("d", 7)]
    assert [i["Name"] for i in select_ideas(ideas, AIScientistV1Config())] == ["c", "d", "a"]
    assert [i["Name"] for i in select_ideas(ideas, AIScientistV1Config(rank_ideas=False, novelty_check=False))] == \
        ["a", "b", "c", "d"]


def test_notes_are_taken_out_of_the_reply_before_edits_are_applied() -> None:
    notes, rest = notes_and_edits("<notes>\n## Run 1: x = 1\n</notes>\nPlan: y\n\nparams.json\n<<<<<<< SEARCH")
    assert notes == "## Run 1: x = 1" and "<notes>" not in rest and rest.strip().startswith("Plan: y")


# -- v1 ------------------------------------------------------------------------------------------------


def _v1_step(policy, tree: Tree, score, memo: dict | None = None, status: str | None = None):
    action = policy.next_action(tree.store, random.Random(0))
    node = tree.add(action.operator, action.parents, score, status=status, hints=action.hints)
    node.memo = memo or {}
    policy.observe(node, tree.store)
    return action, node


def test_v1_ideas_first_then_a_bounded_chain_per_idea_from_the_baseline(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AIScientistV1Policy(AIScientistV1Config(max_runs=2))
    action = policy.next_action(tree.store, random.Random(0))
    assert action.parents == (ROOT,) and action.hints["ideate"] and action.hints["offset"] == 0
    tree.claim(action.operator, action.parents, action.hints)
    assert policy.next_action(tree.store, random.Random(0)) is None  # ideas are being generated
    tree.store._pending.clear()
    _, run1 = _v1_step(policy, tree, 2.0, {"ideas": [idea("a"), idea("b")], "idea": 0, "notes": "plan"})
    assert len(policy.ideas) == 2
    action, run2 = _v1_step(policy, tree, 2.5)  # run 2 builds on run 1's code, better or not
    assert action.parents == (run1.id,) and action.hints == {"idea": 0, "run": 2, "try": 1}
    action, _ = _v1_step(policy, tree, 1.0)
    assert action.parents == (ROOT,) and action.hints["idea"] == 1  # max_runs reached: next idea, from the baseline
    assert policy.chains["0"]["done"]


def test_v1_failed_runs_are_retried_from_the_failed_code_then_the_idea_is_dropped(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AIScientistV1Policy(AIScientistV1Config(max_retries_per_run=3))
    _, run1 = _v1_step(policy, tree, None, {"ideas": [idea("a"), idea("b")], "idea": 0})
    action, unrun = _v1_step(policy, tree, None, status="edit_failed")
    assert action.parents == (run1.id,) and action.hints["try"] == 2
    action, _ = _v1_step(policy, tree, None)
    assert action.parents == (run1.id,) and action.hints["try"] == 3  # a fix that never ran: same code again
    assert policy.chains["0"]["done"]
    assert policy.next_action(tree.store, random.Random(0)).hints == {"idea": 1, "run": 1, "try": 1}


def test_v1_all_completed_ends_an_idea_and_spent_ideas_bring_a_new_batch(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AIScientistV1Policy(AIScientistV1Config())
    _v1_step(policy, tree, 2.0, {"ideas": [idea("a")], "idea": 0})
    _v1_step(policy, tree, None, {"completed": True}, status="no_op")
    action = policy.next_action(tree.store, random.Random(0))
    assert action.hints == {"ideate": True, "offset": 1, "run": 1, "try": 1}


def test_v1_runs_different_ideas_in_parallel(tmp_path) -> None:
    tree, policy = Tree(tmp_path), AIScientistV1Policy(AIScientistV1Config())
    _, run1 = _v1_step(policy, tree, 2.0, {"ideas": [idea("a"), idea("b")], "idea": 0})
    first = policy.next_action(tree.store, random.Random(0))
    tree.claim(first.operator, first.parents, first.hints)
    second = policy.next_action(tree.store, random.Random(0))
    assert first.hints["idea"] == 0 and second.hints["idea"] == 1 and second.parents == (ROOT,)
    tree.claim(second.operator, second.parents, second.hints)
    third = policy.next_action(tree.store, random.Random(0))  # every idea busy: a third slot asks for new ideas
    assert third.hints == {"ideate": True, "offset": 2, "run": 1, "try": 1}
    tree.claim(third.operator, third.parents, third.hints)
    assert policy.next_action(tree.store, random.Random(0)) is None  # wait for them
    twin = AIScientistV1Policy(AIScientistV1Config())
    twin.load_state_dict(json.loads(json.dumps(policy.state_dict())))
    assert twin.state_dict() == policy.state_dict()


# -- v2 ------------------------------------------------------------------------------------------------


def test_v2_stage_budgets_are_floors_with_the_remainder_last() -> None:
    assert split_budget(10, [0.1, 0.2, 0.5, 0.2]) == [1, 2, 5, 2]
    assert split_budget(50, [0.1, 0.2, 0.5, 0.2]) == [5, 10, 25, 10]
    assert split_budget(5, [0.1, 0.2, 0.5, 0.2]) == [1, 1, 2, 1]  # stage 1 (the ideas) is never skipped


def _v2_step(policy, tree: Tree, score, memo: dict | None = None, rng=None):
    action = policy.next_action(tree.store, rng or random.Random(0))
    node = tree.add(action.operator, action.parents, score, hints=action.hints)
    node.memo = memo or {}
    policy.observe(node, tree.store)
    return action, node


def test_v2_stage_one_drafts_one_per_idea_then_debugs_or_improves(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = AIScientistV2Policy(AIScientistV2Config(), replace(_toy(50), metric=tree.store.metric))
    action = policy.next_action(tree.store, random.Random(0))
    assert (action.operator, action.parents, action.hints) == ("draft", (ROOT,), {"stage": 0, "idea": 0, "ideate": True})
    tree.claim(action.operator, action.parents, action.hints)
    assert [a.hints.get("idea") for a in policy.agenda] == [1, 2, 3]  # the 4th slot: nothing scored, so a draft
    assert policy.next_action(tree.store, random.Random(0)) is None  # idea 1 waits for the ideas
    tree.store._pending.clear()
    ideas = {"ideas": [idea("a"), idea("b"), idea("c")]}
    buggy = tree.add("draft", (ROOT,), None, hints=action.hints)
    buggy.memo = ideas
    for _ in range(3):
        _v2_step(policy, tree, 2.0)
    # stage 1 has spent 4 of its 5: a batch of 1; random() < debug_prob picks the buggy draft
    action, _ = _v2_step(policy, tree, 1.5, rng=ScriptedRng([0.1], [0]))
    assert (action.operator, action.parents) == ("debug", (buggy.id,))


def test_v2_each_stage_starts_from_the_previous_stage_best(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = AIScientistV2Policy(AIScientistV2Config(num_ideas=1, debug_prob=0.0), replace(_toy(10), metric=tree.store.metric))
    _, draft = _v2_step(policy, tree, 2.0, {"ideas": [idea("a")]})  # stage 1: 1 experiment
    assert policy.stage == 0
    sibling_actions = [_v2_step(policy, tree, s)[0] for s in (2.5, 1.5)]  # stage 2: 2, both improve the draft
    assert policy.stage == 1 and all(a.parents == (draft.id,) and a.hints["stage"] == 1 for a in sibling_actions)
    batch = [_v2_step(policy, tree, s) for s in (1.2, 1.1, 1.3, 1.4)]  # stage 3 plans 4 at once
    assert policy.roots == [ROOT, draft.id, "0003"]
    # one draft wanted, and nothing of the stage scored when the batch was planned: all drafts, each from
    # stage 2's best (FML-bench drafted from the baseline here), none from the baseline
    assert all((a.operator, a.parents) == ("draft", ("0003",)) for a, _ in batch)
    action, _ = _v2_step(policy, tree, 1.6)
    assert (action.operator, action.parents) == ("improve", (batch[1][1].id,))  # then the stage's best
    action = policy.next_action(tree.store, random.Random(0))
    assert policy.stage == 3 and (action.operator, action.parents) == ("improve", (batch[1][1].id,))
    twin = AIScientistV2Policy(AIScientistV2Config(num_ideas=1, debug_prob=0.0), replace(_toy(10), metric=tree.store.metric))
    twin.load_state_dict(json.loads(json.dumps(policy.state_dict())))
    assert twin.next_action(tree.store, random.Random(1)) == policy.next_action(tree.store, random.Random(1))


def test_v2_waits_for_the_stage_results_before_moving_on(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = AIScientistV2Policy(AIScientistV2Config(num_ideas=1), replace(_toy(10), metric=tree.store.metric))
    action = policy.next_action(tree.store, random.Random(0))
    tree.claim(action.operator, action.parents, action.hints)  # stage 1's only experiment, in flight
    assert policy.next_action(tree.store, random.Random(0)) is None and policy.stage == 0


def test_v1_run_carries_notes_and_all_completed_ends_the_idea_without_an_experiment(tmp_path) -> None:
    from researchbench.agents.ai_scientist_v1 import run
    from researchbench.benchmark.llm.config import LLMConfig

    tree, task = Tree(tmp_path), _toy()
    files = {rel: tree.store.blobs.put((task.code_dir / rel).read_text()) for rel in ("model.py", "params.json")}
    tree.store.get(ROOT).files = files
    run1 = tree.add("run", (ROOT,), 2.0, hints={"ideate": True, "offset": 0, "run": 1, "try": 1})
    run1.files, run1.memo = files, {"ideas": [idea("steeper")], "idea": 0, "notes": "# Steeper\nRun 1: slope 2."}
    llm = FakeLLM({"improve": ["<notes>\n# Steeper\nRun 1: slope 2. Nothing left to try.\n</notes>\nALL_COMPLETED"]})
    llm.cfg = LLMConfig()
    ctx = OpContext(task=task, store=tree.store, llm=llm, rng=random.Random(0), steps_left=3, budget=task.budget)
    cfg = AIScientistV1Config(data_preview=False)
    proposal = run(cfg, ctx, [run1], _action({"idea": 0, "run": 2, "try": 1}))
    prompt = llm.seen[0][1][-1]["content"]
    assert "Run 1: slope 2." in prompt and "Run 1 of this idea completed: mse = 2" in prompt
    assert "A steeper slope" not in prompt and "Steeper (Interestingness 5" in prompt
    assert proposal.edit_ok and not proposal.changed  # recorded as a no-op: no experiment spent
    assert proposal.memo == {"notes": "# Steeper\nRun 1: slope 2. Nothing left to try.", "completed": True}


def test_v1_says_how_many_runs_the_budget_still_allows_the_idea(tmp_path) -> None:
    """Issue 27 (ai_scientist_v1 on fairness): with 1 experiment left the job still said "run 2 of at most 5",
    and did not say where the experiments an idea leaves go."""
    from researchbench.agents.ai_scientist_v1 import run
    from researchbench.benchmark.llm.config import LLMConfig

    tree, task = Tree(tmp_path), _toy()
    files = {rel: tree.store.blobs.put((task.code_dir / rel).read_text()) for rel in ("model.py", "params.json")}
    tree.store.get(ROOT).files = files
    run1 = tree.add("run", (ROOT,), 2.0, hints={"ideate": True, "offset": 0, "run": 1, "try": 1})
    run1.files, run1.memo = files, {"ideas": [idea("steeper")], "idea": 0, "notes": "# Steeper"}
    jobs = {}
    for left in (1, 9):
        llm = FakeLLM({"improve": ["<notes>\n# Steeper\n</notes>\nALL_COMPLETED"]})
        llm.cfg = LLMConfig()
        ctx = OpContext(task=task, store=tree.store, llm=llm, rng=random.Random(0), steps_left=left, budget=task.budget)
        run(AIScientistV1Config(data_preview=False), ctx, [run1], _action({"idea": 0, "run": 2, "try": 1}))
        jobs[left] = llm.seen[0][1][-1]["content"]
    assert "(run 2 of at most 2)" in jobs[1] and "(run 2 of at most 5)" in jobs[9]  # max_runs 5
    assert "the experiments it leaves go to the next idea" in jobs[1]


def _action(hints: dict):
    from researchbench.benchmark.contract.agent_api import Action

    return Action("run", ("0001",), hints)
