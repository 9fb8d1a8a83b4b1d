"""What an LLM is told (issue 18): the run's budget in one line everywhere, the job's library versions,
the baseline's and each experiment's time against the limit, the harness files in full on the first
drafting prompt, analyses that keep their conclusion, a current "best so far", and the debug history
the debug job names, and the val and test sets' sizes and noise. Facts are asserted, not wording."""

from __future__ import annotations

import importlib.metadata
import platform
import random
from dataclasses import replace
from pathlib import Path

from researchbench.agents.kit import operators, prompts
from researchbench.agents.kit.prompts import PromptConfig
from researchbench.benchmark.contract.agent_api import OpContext
from researchbench.benchmark.llm.accounting import LLMCall
from researchbench.benchmark.plugins.manager import get_registry
from researchbench.benchmark.records.journal import OK, Node
from researchbench.benchmark.tasks.environment import requirement_versions
from researchbench.benchmark.tasks.manifest import load_task
from researchbench.benchmark.tasks.noise import Measured, Noise, PhaseNoise, UnitFiles
from trees import Tree

CFG = PromptConfig(data_preview=False)
CONCLUSION = "The most promising next step is a doubly robust learner with cross-fitting."


class FakeLLM:
    def __init__(self, reply: str = ""):
        self.reply, self.seen = reply, []

    def complete(self, messages, operator=""):
        self.seen.append((operator, messages))
        return LLMCall(model="fake", operator=operator, response=self.reply, messages=messages)


def _ctx(tmp_path: Path, steps: int = 8, timeout: float = 60.0, llm=None) -> tuple[OpContext, Tree]:
    """Causality's manifest (its description states 10 experiments and 120 CPU-seconds) run with a smaller
    budget, on a hand-built tree whose baseline ran on the CPU clock."""
    task = load_task(get_registry().tasks["causality"])
    tree = Tree(tmp_path)
    baseline = tree.store.get("0000")
    baseline.clock, baseline.cpu_seconds, baseline.seconds = "cpu", 4.0, 6.5
    budget = replace(task.budget, steps=steps, step_timeout_s=timeout)
    ctx = OpContext(task=task, store=tree.store, llm=llm, rng=random.Random(0), steps_left=steps - 2, budget=budget,
                    compute_left_s=3000.0, libraries=requirement_versions(task))
    return ctx, tree


def _user(messages: list[dict[str, str]]) -> str:
    return messages[-1]["content"]


def _edit_prompts(ctx: OpContext, tree: Tree) -> dict[str, str]:
    good = tree.add("draft", ("0000",), 2.0)
    other = tree.add("improve", (good.id,), 1.5)
    buggy = tree.add("improve", (good.id,), None)
    return {"draft": _user(operators.build_messages(ctx, "draft", [tree.store.get("0000")], CFG)),
            "improve": _user(operators.build_messages(ctx, "improve", [good], CFG, explored=True)),
            "debug": _user(operators.build_messages(ctx, "debug", [buggy], CFG)),
            "crossover": _user(operators.build_messages(ctx, "crossover", [good, other], CFG))}


def test_every_operator_states_the_runs_budget_and_never_the_manifests(tmp_path) -> None:
    llm = FakeLLM("Looks fine. " + CONCLUSION)
    ctx, tree = _ctx(tmp_path, steps=8, timeout=60, llm=llm)
    assert ctx.task.budget.steps == 10 and ctx.task.budget.step_timeout_s == 120  # the manifest's defaults
    texts = _edit_prompts(replace(ctx, llm=None), tree)
    operators.analyze(ctx, tree.add("improve", ("0001",), 1.0), CFG)
    operators.ideation_messages(ctx, CFG, tree.store.get("0000"), [])
    texts["analyze"] = _user(llm.seen[-1][1])
    texts["ideation"] = _user(operators.ideation_messages(ctx, CFG, tree.store.get("0000"), []))
    line = prompts.budget_line(ctx)
    assert "6 of 8 experiments" in line and "3000 s left of 3600 s" in line  # the unit the limit counts
    for role, text in texts.items():
        assert "10 experiments" not in text and "120 CPU-seconds" not in text, role
        assert "8 experiments" in text and "60 CPU-seconds" in text, role
        if role != "analyze":
            assert text.count(line) == 1, role


def test_draft_improve_and_debug_prompts_name_python_and_the_installed_library_versions(tmp_path) -> None:
    ctx, tree = _ctx(tmp_path)
    for role, text in _edit_prompts(ctx, tree).items():
        assert f"Python {platform.python_version()}" in text, role
        for name in ("numpy", "pandas", "scipy", "scikit-learn", "torch", "lightgbm"):  # torch: the common stack
            assert f"{name} {importlib.metadata.version(name)}" in text, (role, name)


def test_a_library_the_job_lacks_is_named_as_absent(tmp_path) -> None:
    ctx, tree = _ctx(tmp_path)
    ctx = replace(ctx, libraries={**ctx.libraries, "torch": "not installed"})
    text = _edit_prompts(ctx, tree)["draft"]
    assert "torch not installed" not in text and "NOT installed (do not import): torch" in text


def test_an_analysis_is_read_once_and_whole(tmp_path) -> None:
    """The node whose files the prompt carries keeps its analysis there, not also under recent attempts;
    an ordinary 3-sentence analysis is never cut."""
    ctx, tree = _ctx(tmp_path)
    good = tree.add("draft", ("0000",), 2.0)
    analysis = ("Label spreading over a kNN graph lifted accuracy from 0.685 to 0.802, since digits form tight "
                "clusters in pixel space. Errors concentrate on 1/8 and 3/9, where one atypical seed lets a "
                "neighbouring class absorb part of the cluster. " + CONCLUSION)
    good.analysis = analysis
    text = _user(operators.build_messages(ctx, "improve", [good], CFG))
    assert text.count(analysis) == 1


def test_prompts_show_the_baseline_time_the_limit_and_warn_past_half_of_it(tmp_path) -> None:
    ctx, tree = _ctx(tmp_path, timeout=60)
    slow = tree.add("draft", ("0000",), 2.0)
    slow.clock, slow.cpu_seconds, slow.seconds = "cpu", 45.0, 50.0
    text = _user(operators.build_messages(ctx, "improve", [slow], CFG))
    setup = text.split("# Setup and limits")[1].split("\n# ")[0]
    assert "60 s of CPU time" in setup and "4.0 s CPU / 6.5 s wall" in setup  # baseline: CPU and wall
    assert prompts.HALF_LIMIT_WARNING not in setup
    warned = [line for line in text.splitlines() if prompts.HALF_LIMIT_WARNING in line]
    assert warned and all(f"node {slow.id}" in line for line in warned)
    assert "45.0 s CPU / 50.0 s wall, 75% of the 60 s CPU limit" in warned[0]


def test_every_operator_states_the_val_and_test_sizes_and_the_baselines_noise(tmp_path) -> None:
    """Issue 25: an agent choosing between val scores is told how many units each set holds and how much the
    baseline's metric moves by chance; a task without a measurement says nothing of it."""
    ctx, tree = _ctx(tmp_path)
    noise = Noise(unit="units", units=UnitFiles(labels=("{phase}_ite.csv",), key=("rep", "unit")),
                  measured=Measured(version=ctx.task.version, seeds=(0, 1, 2), draws=100),
                  val=PhaseNoise(size=1500, sampling_sd=0.0731, seed_sd=0.0),
                  test=PhaseNoise(size=1490, sampling_sd=0.0659, seed_sd=0.0))
    ctx = replace(ctx, task=replace(ctx.task, noise=noise))
    for role, text in _edit_prompts(ctx, tree).items():
        setup = text.split("# Setup and limits")[1].split("\n# ")[0]
        for fact in ("1500 units", "1490 units", "pehe", "±0.073", "0.15", "half-samples", "seeds 0-2"):
            assert fact in setup, (role, fact, setup)
        assert "0.066" not in setup  # the test set's sd is a statistic of hidden-test predictions
    ctx = replace(ctx, task=replace(ctx.task, noise=None))
    assert "1500 units" not in _user(operators.build_messages(ctx, "draft", [tree.store.get("0000")], CFG))


def test_the_driver_is_shown_in_full_in_every_prompt_with_room_and_outlined_only_when_short(tmp_path) -> None:
    """Every call is stateless: later prompts that outlined the harness dropped details the model needed
    (issue 27's answerers); an outline is what a prompt over its character budget shrinks it to."""
    ctx, tree = _ctx(tmp_path)
    driver = (ctx.task.code_dir / "driver.py").read_text().rstrip()
    tree.store.get("0000").llm_calls = [{"operator": "analyze"}]  # the baseline's review ran first
    assert driver in _user(operators.build_messages(ctx, "draft", [tree.store.get("0000")], CFG))
    drafted = tree.add("draft", ("0000",), 2.0)
    drafted.llm_calls = [{"operator": "draft"}, {"operator": "analyze"}]
    assert driver in _user(operators.build_messages(ctx, "improve", [drafted], CFG))
    short = _user(operators.build_messages(ctx, "improve", [drafted], replace(CFG, prompt_chars=len(driver))))
    assert driver not in short and "def run(" in short


def test_a_long_analysis_keeps_its_conclusion_in_storage_and_in_later_prompts(tmp_path) -> None:
    long_reply = "The T-learner lowered PEHE from 3.6 to 2.2. " + "It fits each arm separately. " * 120 + CONCLUSION
    llm = FakeLLM(long_reply)
    ctx, tree = _ctx(tmp_path, llm=llm)
    node = tree.add("draft", ("0000",), 2.2)
    stored = operators.analyze(ctx, node, CFG).text
    assert len(stored) < len(long_reply) and stored.endswith(CONCLUSION) and stored.startswith("The T-learner")
    node.analysis = stored
    text = _user(operators.build_messages(replace(ctx, llm=None), "improve", [node], CFG, explored=True))
    assert text.count("doubly robust learner") == 1  # with the solution's files, not again under recent attempts
    tree.add("improve", (node.id,), 2.3)  # pushes `node` out of the recent attempts, into AIDE's memory
    older = _user(operators.build_messages(replace(ctx, llm=None), "improve", [node], replace(CFG, memory_size=1),
                                           explored=True))
    assert "doubly robust learner" in older.split("# Earlier ideas explored")[1].split("\n# ")[0]


def test_the_review_sees_the_whole_task_and_a_current_best(tmp_path) -> None:
    llm = FakeLLM("ok. " + CONCLUSION)
    ctx, tree = _ctx(tmp_path, llm=llm)
    # reviewed before it is stored (as the engine does): the store's best is still the baseline
    node = Node(id="0001", step=1, operator="improve", parents=["0000"], status=OK, executed=True, primary=0.5)
    operators.analyze(ctx, node, CFG)
    text = _user(llm.seen[-1][1])
    assert prompts.task_text(ctx).strip() in text  # never cut: its metric section is near the end
    assert f"best so far: node {node.id}" in text


def test_the_debug_prompt_shows_the_debug_history_its_job_names(tmp_path) -> None:
    ctx, tree = _ctx(tmp_path)
    first = tree.add("draft", ("0000",), None)
    first.stderr = tree.store.blobs.put("ZeroDivisionError: division by zero in fit_arm\n")
    text = _user(operators.build_messages(ctx, "debug", [first], CFG))
    assert "debug history" in text.lower() and "# Debug history" in text
    assert text.count("division by zero in fit_arm") == 1  # with the solution, not again among the attempts
    retry = tree.add("debug", (first.id,), None)
    text = _user(operators.build_messages(ctx, "debug", [retry], CFG))
    history = text.split("# Debug history")[1].split("\n# ")[0]
    assert f"node {first.id}" in history


def _section(text: str, title: str) -> str:
    return text.split(f"# {title}")[1].split("\n# ")[0]


def test_an_attempts_first_printed_diagnostics_survive_a_long_output(tmp_path) -> None:
    """Issue 27: a worse attempt's output was cut from the top, so what a model printed first (its
    diagnostics) was lost first; a better attempt that is not being edited showed no output at all."""
    ctx, tree = _ctx(tmp_path)
    good = tree.add("draft", ("0000",), 2.0)
    worse = tree.add("improve", (good.id,), 2.5)
    worse.stdout = tree.store.blobs.put("DIAG fold errors 0.31 0.29\n" + "epoch line\n" * 2000 + "final 2.5\n")
    worse.stderr = tree.store.blobs.put("UserWarning: something\n" * 500)
    better = tree.add("improve", (good.id,), 1.5)
    better.stdout = tree.store.blobs.put("BETTER-DIAG kept 12 features\n")
    text = _user(operators.build_messages(ctx, "improve", [good], CFG))
    attempts = _section(text, "Recent attempts")
    assert "DIAG fold errors" in attempts and "final 2.5" in attempts
    assert "BETTER-DIAG kept 12 features" in attempts


def test_an_attempts_diagnostic_table_of_1500_characters_is_shown_whole(tmp_path) -> None:
    """Issue 27 (greedy on causal_discovery): an earlier attempt's output kept 800 characters per stream, so a
    per-dataset table printed by the model lost its middle rows; the default keeps 1600 per stream."""
    ctx, tree = _ctx(tmp_path)
    good = tree.add("draft", ("0000",), 2.0)
    worse = tree.add("improve", (good.id,), 2.5)
    rows = [f"dataset v{k}: shd {k + 10:>3} edges {40 + k:>3} skeleton f1 0.{k}1 (row {k:02d})" for k in range(26)]
    worse.stdout = tree.store.blobs.put("\n".join(rows) + "\n")
    assert 1400 < len("\n".join(rows)) < 1600
    attempts = _section(_user(operators.build_messages(ctx, "improve", [good], CFG)), "Recent attempts")
    assert all(row in attempts for row in rows)


def test_the_best_node_stays_in_the_attempts_however_many_followed(tmp_path) -> None:
    ctx, tree = _ctx(tmp_path)
    best = tree.add("draft", ("0000",), 0.5)
    for _ in range(CFG.memory_size + 2):
        tree.add("improve", (best.id,), 2.0)
    text = _user(operators.build_messages(ctx, "improve", [tree.store.get("0001")], CFG))
    assert f"node {best.id}, draft" in _section(text, "Recent attempts")


def test_the_solution_being_edited_lists_what_was_tried_from_it_and_is_not_the_latest(tmp_path) -> None:
    """Issue 27: greedy returns to its best node, whose analysis may recommend a step already tried and
    lost; the prompt says what was tried from it and that the latest attempt is not applied."""
    ctx, tree = _ctx(tmp_path)
    best = tree.add("draft", ("0000",), 1.0)
    lost = tree.add("improve", (best.id,), 1.8)
    lost.plan = "Plan: add cross-fitting to the R-learner."
    text = _user(operators.build_messages(ctx, "improve", [best], CFG))
    current = _section(text, "Current solution")
    assert f"node {lost.id}" in current and "cross-fitting" in current
    assert f"latest attempt, node {lost.id}, is not this solution" in current
    assert "latest attempt" not in _section(_user(operators.build_messages(ctx, "improve", [lost], CFG)),
                                            "Current solution")


def test_the_budget_says_a_failed_run_spends_an_experiment_and_names_commands_only_where_they_exist(tmp_path) -> None:
    ctx, _ = _ctx(tmp_path)
    line = prompts.budget_line(ctx)
    assert "every run spends one, failed or not" in line and "command" not in line
    assert "the commands you run" in prompts.budget_line(ctx, commands=True)


def test_a_harness_outline_never_claims_an_earlier_prompt_showed_the_file(tmp_path) -> None:
    """Every call is stateless: the model has not seen any earlier prompt."""
    ctx, tree = _ctx(tmp_path)
    drafted = tree.add("draft", ("0000",), 2.0)
    drafted.llm_calls = [{"operator": "draft"}]
    text = _user(operators.build_messages(ctx, "improve", [drafted], replace(CFG, prompt_chars=2000)))
    harness = _section(text, "Harness files")
    assert "outline" in harness and "earlier prompt" not in text


def test_search_replace_asks_for_whole_lines_in_its_rules_and_in_its_feedback() -> None:
    """Issue 27: blocks that quoted part of a line (a key of a one-line JSON file) failed with no hint why."""
    from researchbench.benchmark.edits import apply_edits, format_instructions

    assert "never part of a line" in format_instructions("search_replace")
    result = apply_edits('params.json\n<<<<<<< SEARCH\n"a": 1\n=======\n"a": 3\n>>>>>>> REPLACE\n',
                         {"params.json": '{"a": 1, "b": 2}\n'}, lambda rel: True)
    assert not result.ok and "never part of a line" in result.feedback


def test_a_crossover_prompt_shows_each_solutions_lineage(tmp_path) -> None:
    """Issue 27: a crossover of a node with its own parent hid that B was A's ancestor."""
    ctx, tree = _ctx(tmp_path)
    text = _edit_prompts(ctx, tree)["crossover"]  # crossover of 0001 (draft) and 0002 (an improve of 0001)
    assert "lineage: 0000 (baseline) -> 0001 (draft) -> 0002 (improve)" in text


def test_a_val_metric_at_its_bound_is_said_so(tmp_path) -> None:
    """Issue 27 (mcts on ood_detection): once val reached its best possible value every node tied and the
    prompts still asked to lower it."""
    ctx, tree = _ctx(tmp_path)
    metric = replace(ctx.task.metric, best_possible=0.0)
    ctx = replace(ctx, task=replace(ctx.task, metric=metric))
    at_bound = tree.add("draft", ("0000",), 0.0)
    setup = _section(_user(operators.build_messages(ctx, "improve", [at_bound], CFG)), "Setup and limits")
    assert "best possible value (0)" in setup
    ctx2, tree2 = _ctx(tmp_path / "other")  # a run whose best is above the bound says nothing of it
    ctx2 = replace(ctx2, task=replace(ctx2.task, metric=metric))
    above = tree2.add("draft", ("0000",), 0.5)
    assert "best possible value" not in _user(operators.build_messages(ctx2, "improve", [above], CFG))


def test_nodes_tied_at_the_bound_are_ranked_by_the_tasks_tie_breaks(tmp_path) -> None:
    """Issue 27 (mcts on ood_detection): once every node tied, ties went silently to the earliest node. A
    task's tie-breaks now pick the best among equals (the node improved on and finally tested), and the
    prompt says how ties go."""
    ctx, _ = _ctx(tmp_path)
    tree = Tree(tmp_path / "ranked", tie_breaks=(("auroc", "higher"),))
    metric = replace(ctx.task.metric, best_possible=0.0, tie_breaks=(("auroc", "higher"),))
    ctx = replace(ctx, store=tree.store, task=replace(ctx.task, metric=metric))
    tree.add("draft", ("0000",), 0.0, metrics={"auroc": 0.81})
    stronger = tree.add("draft", ("0000",), 0.0, metrics={"auroc": 0.86})
    tree.add("improve", (stronger.id,), 0.0, metrics={"auroc": 0.86})  # a full tie keeps the earlier node
    assert tree.store.best() is stronger
    text = _user(operators.build_messages(ctx, "improve", [stronger], CFG))
    setup = _section(text, "Setup and limits")
    assert f"(node {stronger.id})" in setup
    assert "ties go to the higher auroc, then the earliest node" in setup
    # a tie won on the tie-break is not shown as a step forward: the prompt says what decided it
    assert "the best so far, tied with node 0001 on pehe and ahead by its higher auroc (0.86 vs 0.81)" in text


def test_a_warning_repeated_by_a_library_is_shown_once_with_a_count(tmp_path) -> None:
    """Issue 27 (evolutionary on causal_effect): one library warning was pasted 8 times into one output."""
    ctx, tree = _ctx(tmp_path)
    node = tree.add("draft", ("0000",), 2.0)
    warning = "/lib/sklearn/base.py:12: ConvergenceWarning: lbfgs failed to converge\n  warnings.warn(\n"
    node.stderr = tree.store.blobs.put("fold 1\n" + warning * 8 + "RUN-DIAG done\n")
    text = prompts.output_tail(ctx, node, 3000)
    assert text.count("ConvergenceWarning") == 1 and text.count("warnings.warn(") == 1
    assert "RUN-DIAG done" in text and "7 repeats" in text


def test_the_idea_being_judged_is_read_whole(tmp_path) -> None:
    """Issue 27 (ai_scientist_v2): the idea text was cut in the draft and novelty prompts."""
    import json

    experiment = "Fit a doubly robust learner. " + "Step detail. " * 150 + "END-OF-EXPERIMENT"
    idea = {"Name": "dr", "Title": "Doubly robust", "Experiment": experiment, "Interestingness": 6,
            "Feasibility": 8, "Novelty": 5}
    llm = FakeLLM(f"Thought: ok.\n```json\n{json.dumps(idea)}\n```\nI am done")
    ctx, tree = _ctx(tmp_path, llm=llm)
    operators.ideate(ctx, CFG, tree.store.get("0000"), 1, 1, True)
    novelty = [_user(m) for op, m in llm.seen if op == "novelty"]
    assert novelty and "END-OF-EXPERIMENT" in novelty[0]


def test_the_wall_clock_backstop_of_a_cpu_limited_step_is_stated(tmp_path) -> None:
    """Issue 27's answerers: the step limit is CPU time, but a run that waits is killed on the wall clock too."""
    ctx, tree = _ctx(tmp_path, timeout=60)
    baseline = tree.store.get("0000")
    assert "wall-clock time" not in _section(_user(operators.build_messages(ctx, "draft", [baseline], CFG)),
                                             "Setup and limits")  # unknown (a journal from before): not guessed
    baseline.wall_limit_s = 300.0
    setup = _section(_user(operators.build_messages(ctx, "draft", [baseline], CFG)), "Setup and limits")
    assert "60 s of CPU time" in setup and "300 s of wall-clock time" in setup


def test_the_job_says_how_much_of_a_runs_output_comes_back(tmp_path) -> None:
    """Issue 27's answerers: diagnostics were cut and no prompt said how much output is kept."""
    ctx, tree = _ctx(tmp_path)
    cfg = replace(CFG, output_tail_chars=2500, attempt_tail_chars=1000)
    for role in ("draft", "improve", "debug"):
        parent = tree.store.get("0000")
        job = _section(_user(operators.build_messages(ctx, role, [parent], cfg)), "Your job")
        assert "2500 characters per stream" in job and "500 once it is an earlier attempt" in job, role


def test_the_improve_job_forbids_repeats_from_this_solution_only_and_invites_combining() -> None:
    """mcts and evolutionary answerers read "do not repeat an idea already tried" as forbidding a change that
    helped on a sibling branch, and kept the weaker code: only this solution's own tries are off limits."""
    from researchbench.agents.kit.prompts import JOBS

    improve = JOBS["improve"]
    assert "already tried from this solution" in improve
    assert "another attempt is worth bringing into this one" in improve
    assert "may be reused" in JOBS["draft"]  # a new draft may keep the part every method needs
