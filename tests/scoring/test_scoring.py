"""Scoring: golden values computed by hand on a small fixture journal, the three normalizations, grouping
that never mixes budgets, seeds statistics, torn journals, exploration metrics and the CLI's errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.scoring import comparisons, farbench, operators, process, tables
from researchbench.benchmark.scoring.normalize import achievement, fml_ni, unclipped
from researchbench.benchmark.scoring.ranges import manifest_range
from researchbench.benchmark.scoring.runs import MetricInfo, load_run
from researchbench.benchmark.scoring.selection import select_runs
from researchbench.benchmark.scoring.stats import bootstrap_ci, domain_balanced, mean_sem, paired
from conftest import run_cli
from scoring_runs import Step, golden_steps, write_run


@pytest.fixture
def golden(tmp_path: Path):
    run_dir = write_run(tmp_path, "aide", "toy", 0, golden_steps(), floor=20.0, target=0.0, best_possible=0.0,
                        baseline_test=12.0, best_test=5.0, budget_steps=6, compute_hours=1.0, wall_seconds=7200)
    return load_run(run_dir)


def test_golden_process_metrics_by_hand(golden) -> None:
    # val steps (executed, not the baseline): 0001 0002 0003 0005 0006 -> K = 5; denominator |0 - 20| = 20
    # best so far: 8, 8, 4, 4, 4 -> ic = 0.1, 0.1, 0.3, 0.3, 0.3
    rng = manifest_range(golden.metric)
    assert process.improvement_curve(golden, rng) == pytest.approx([0.1, 0.1, 0.3, 0.3, 0.3])
    eff = process.efficiency(golden, rng)
    assert eff["auc_fml"] == pytest.approx(1.1 / 5)  # over K
    assert eff["auc_budget"] == pytest.approx(1.1 / 6)  # over the budget of 6
    assert eff["first_improvement_step"] == 1
    assert eff["late_gain_fml"] == pytest.approx((0.3 - 0.1) / 0.3)  # ic[K-1] vs ic[K//2 - 1] = ic[1]
    assert eff["best_step_fml"] == 4  # the LAST step equal to the best value (0005, a tie)
    assert eff["best_step"] == 3  # the node the run chose as best (0003, earliest on ties)
    # NI(val) = (10 - 4)/20 = 0.3, NI(test) = (12 - 5)/20 = 0.35
    assert process.generalization(golden, rng) == pytest.approx(0.05)
    assert process.reliability(golden) == pytest.approx({"valid_step_ratio": 3 / 5, "valid_attempt_ratio": 3 / 6})
    assert process.cost(golden) == pytest.approx({"tokens_m": 0.003, "usd": 0.3, "wall_h": 2.0})


def test_golden_farbench_diagnostics_by_hand(golden) -> None:
    # tau_i = max(i/6, seconds so far/3600) = i/6; valid evals: 0001 (tau 1/6, A 0.6), 0003 (3/6, 0.8), 0005 (4/6, 0.8)
    d = farbench.diagnostics(golden)
    assert d["IF"] == pytest.approx(1 - 1 / 6)
    assert d["CES"] == pytest.approx(3 / 5)  # 0002 exited 1, 0006 timed out
    assert d[farbench.FA] == pytest.approx(0.6) and d[farbench.BEST] == pytest.approx(0.8)
    assert d[farbench.HG] == pytest.approx((0.8 - 0.6) / (1 - 0.6))
    assert d[farbench.PE] == pytest.approx((3 / 6 - 1 / 6) * 0.6 + (4 / 6 - 3 / 6) * 0.8 + (1 - 4 / 6) * 0.8)
    assert d[farbench.PASS] == 1 and d[farbench.REGIME] == "productive"
    # validation scores sit on test-scale anchors (no val-scale ones exist): the names say so
    assert farbench.FA == "FA (val on test anchors)" and "IF" in d and "CES" in d


def test_golden_operators_and_cost_per_improvement(golden) -> None:
    rows = {r["operator"]: r for r in operators.operator_counts(golden)}
    assert (rows["draft"]["attempts"], rows["draft"]["ok"], rows["draft"]["buggy"]) == (2, 1, 1)
    assert (rows["improve"]["attempts"], rows["improve"]["edit_failed"], rows["improve"]["ok"]) == (3, 1, 1)
    assert operators.debug_chains(golden) == (1, 1)  # 0002 -> debug 0003 scored; 0006 was never debugged
    assert operators.cost_per_improvement(golden) == pytest.approx(
        {"improvements": 2, "usd_per_improvement": 0.15, "tokens_per_improvement": 1500})
    table = tables.operators_table([golden]).set_index("operator")
    assert table.loc["improve", "success_rate"] == pytest.approx(1 / 3)
    assert table.loc["improve", "edit_failure_rate"] == pytest.approx(1 / 3)


def test_golden_scores_row(golden) -> None:
    row = tables.run_row(golden, None)
    assert row["fml_ni"] == pytest.approx(0.35)  # (12 - 5) / |0 - 20|
    assert row["achievement"] == pytest.approx(0.75) and row["unclipped"] == pytest.approx(0.75)
    assert math.isnan(row["spread_fml"]) and math.isnan(row["reach_mean"])  # no embeddings given


@pytest.mark.parametrize("direction, floor, target, best, base, agent, ni, ach, unc", [
    # higher is better (accuracy): floor 0.5, target 0.9, best possible 1
    ("higher", 0.5, 0.9, 1.0, 0.6, 0.95, (0.95 - 0.6) / 0.5, 1.0, (0.95 - 0.5) / 0.4),  # past the target
    ("higher", 0.5, 0.9, 1.0, 0.6, 0.4, 0.0, 0.0, (0.4 - 0.5) / 0.4),  # a regression below the floor
    ("higher", 0.5, 0.9, None, 0.6, 0.7, 0.1 / 0.4, 0.5, 0.5),  # no best_possible: p_best = target
    # lower is better (error): floor 20, target 2, best possible 0
    ("lower", 20.0, 2.0, 0.0, 10.0, 1.0, 9 / 20, 1.0, 19 / 18),
    ("lower", 20.0, 2.0, 0.0, 10.0, 25.0, 0.0, 0.0, -5 / 18),
    ("lower", 20.0, 2.0, 0.0, 10.0, 11.0, 0.0, 0.5, 0.5),  # worse than the baseline: NI clamps to 0
])
def test_three_normalizations(direction, floor, target, best, base, agent, ni, ach, unc) -> None:
    metric = MetricInfo("m", direction, floor, target, best)
    assert fml_ni(manifest_range(metric), agent, base) == pytest.approx(ni)
    assert achievement(metric, agent) == pytest.approx(ach)
    assert unclipped(metric, agent) == pytest.approx(unc)


def test_missing_scores_follow_each_convention() -> None:
    metric = MetricInfo("m", "lower", 20.0, 0.0)
    assert fml_ni(manifest_range(metric), None, 10.0) == 0.0  # FML-bench credits the baseline
    assert achievement(metric, None) == 0.0  # FARBench: an unscored episode is 0
    assert math.isnan(unclipped(metric, None))  # ours: unknown stays unknown


def test_early_plateau_stuck_low_zero_and_never_enter(tmp_path: Path) -> None:
    def regime(*steps, budget=10) -> str:
        run = write_run(tmp_path / str(len(list(tmp_path.iterdir()))), "a", "t", 0,
                        [Step("0000", "baseline", "ok", 30.0), *steps], budget_steps=budget)
        return farbench.diagnostics(load_run(run))[farbench.REGIME]

    assert regime(Step("0001", "draft", "buggy", None, ["0000"])) == "never_enters_loop"
    assert regime(Step("0001", "draft", "ok", 25.0, ["0000"])) == "scored_zero"  # worse than the floor of 20
    assert regime(Step("0001", "draft", "ok", 18.0, ["0000"]), Step("0002", "improve", "ok", 17.0, ["0001"])) == \
        "stuck_low"
    assert regime(Step("0001", "draft", "ok", 6.0, ["0000"]), Step("0002", "improve", "ok", 5.8, ["0001"])) == \
        "early_plateau"


def test_exploration_metrics_by_hand() -> None:
    e = np.array([[1.0, 0.0], [3.0, 0.0], [1.0, 2.0], [3.0, 2.0]])
    out = process.exploration(e, np.array([1.0, 0.0]))
    assert out["spread"] == pytest.approx(math.sqrt(2))  # every point is sqrt(2) from the centroid (2, 1)
    assert out["reach"] == pytest.approx(math.sqrt(8))  # (3, 2) from the baseline (1, 0)
    assert out["effective_dim"] == pytest.approx(2.0)  # equal variance along both axes
    assert out["uniqueness"] == pytest.approx(3 / 4)  # (1,0) and (3,0) are one direction: cosine distance 0
    with_zero = process.exploration(np.array([[0.0, 0.0], [1.0, 0.0]]), None)
    assert with_zero["uniqueness"] == 1.0 and math.isnan(with_zero["reach"])  # a zero vector is its own cluster


def _runs(tmp_path: Path, specs) -> list:
    for agent, task, seed, budget, best_val, test in specs:
        write_run(tmp_path, agent, task, seed, [Step("0000", "baseline", "ok", 10.0),
                                               Step("0001", "draft", "ok", best_val, ["0000"])],
                  baseline_test=12.0, best_test=test, budget_steps=budget, domain=f"d-{task[-1]}",
                  run_id=f"seed{seed}-b{budget}")
    return select_runs(tmp_path, warn=lambda line: None).runs


def test_grouping_refuses_to_mix_budgets(tmp_path: Path) -> None:
    df = tables.with_variant(tables.runs_table(_runs(tmp_path, [
        ("aide", "t1", 0, 2, 8.0, 8.0), ("aide", "t1", 1, 2, 6.0, 6.0), ("aide", "t1", 0, 10, 2.0, 2.0)])))
    groups = tables.groups_table(df)
    assert sorted(groups["budget"]) == ["10exp/$1/1h", "2exp/$1/1h"]  # two groups, never one mean
    assert groups.set_index("budget").loc["2exp/$1/1h", "n"] == 2
    with pytest.raises(UserError, match="different budget values .*add budget to --group-by"):
        tables.groups_table(df, ["agent", "task"])
    pivot = comparisons.score_pivot(df, "achievement")
    assert sorted(pivot.index) == ["aide [10exp/$1/1h]", "aide [2exp/$1/1h]"]


def test_seed_statistics_paired_comparison_and_shared_task_means(tmp_path: Path) -> None:
    # A beats B by 0.1 achievement (2 points of mse / 20) on every shared task and seed; C has one task only
    df = tables.with_variant(tables.runs_table(_runs(tmp_path, [
        ("A", "t1", 0, 5, 6.0, 6.0), ("A", "t1", 1, 5, 6.0, 8.0), ("A", "t2", 0, 5, 6.0, 10.0),
        ("B", "t1", 0, 5, 6.0, 8.0), ("B", "t1", 1, 5, 6.0, 10.0), ("B", "t2", 0, 5, 6.0, 12.0),
        ("B", "t2", 1, 5, 6.0, 12.0), ("C", "t1", 0, 5, 6.0, 4.0)])))
    table = comparisons.paired_table(df, "A", "B")
    result = table.iloc[0]
    assert result["scope"] == "all shared tasks (2)" and result["tasks"] == 2
    assert result["n"] == 3  # (t2, seed 1) exists for B only: left out, not imputed
    assert result["mean_diff"] == pytest.approx(0.1) and result["win_rate"] == 1.0
    assert result["ci_low"] == pytest.approx(0.1) and result["ci_high"] == pytest.approx(0.1)
    assert list(table["scope"]) == ["all shared tasks (2)", "t1", "t2"]  # then each task alone
    assert list(table["n"]) == [3, 2, 1]
    groups = tables.groups_table(df).set_index(["agent", "task"])
    assert groups.loc[("B", "t2"), "n"] == 2 and groups.loc[("A", "t2"), "n"] == 1
    assert groups.loc[("A", "t1"), "achievement_n"] == 2 and groups.loc[("A", "t1"), "fml_ni_n"] == 2
    pivot = comparisons.score_pivot(df, "achievement")
    assert pivot.loc["A", "MEAN (shared tasks)"] == pytest.approx(0.65)  # t1 only: (0.7 + 0.6) / 2
    assert pivot.loc["C", "missing"] == "t2" and pivot.loc["A", "shared tasks"] == "1 of 2: t1"
    assert list(pivot["n"]) == ["1-2", "2", "1"]  # trials per task: A has 2 on t1 and 1 on t2
    domains = comparisons.domain_table(df)
    assert domains.loc["C", "FARBench score"] == "incomplete" and domains.loc["C", "domain:d-2"] == "incomplete"
    assert domains.loc["C", "domain:d-1"] == pytest.approx(80) and domains.loc["C", "missing"] == "t2"
    zero = comparisons.domain_table(df, missing_zero=True)  # FARBench's own convention, on request
    assert zero.loc["C", "FARBench score"] == pytest.approx((80 + 0) / 2) and zero.loc["C", "missing"] == "t2 (counted 0)"
    with pytest.raises(UserError, match="no such agent"):
        comparisons.paired_table(df, "A", "Z")


def test_stats_helpers() -> None:
    assert mean_sem([1.0, 2.0, 3.0]) == pytest.approx((2.0, 1 / math.sqrt(3)))
    low, high = bootstrap_ci([1.0, 2.0, 3.0, 4.0])
    assert 1.0 <= low < 2.5 < high <= 4.0
    assert all(math.isnan(v) for v in bootstrap_ci([1.0]))
    assert paired({("t", 0): 1.0, ("t", 1): 0.0}, {("t", 0): 0.5, ("t", 1): 0.0})["win_rate"] == 0.75
    scores = domain_balanced({"a": 1.0, "b": 0.0, "c": 0.5}, {"a": "x", "b": "x", "c": "y"}, ["a", "b", "c"])
    assert scores == pytest.approx({"domain:x": 50.0, "domain:y": 50.0, "FARBench score": 50.0})
    partial = domain_balanced({"a": 1.0, "c": 0.5}, {"a": "x", "b": "x", "c": "y"}, ["a", "b", "c"])
    assert partial == {"domain:x": "incomplete", "domain:y": 50.0, "FARBench score": "incomplete"}


def test_torn_and_corrupt_journals_are_named_not_fatal(tmp_path: Path) -> None:
    good = write_run(tmp_path, "a", "t", 0, golden_steps(), baseline_test=12.0, best_test=5.0)
    with open(good / "journal.jsonl", "ab") as fh:
        fh.write(b'{"kind": "finished", "node": {"id": "00')  # killed mid-write
    bad = write_run(tmp_path, "a", "t", 1, golden_steps(), baseline_test=12.0, best_test=5.0)
    lines = (bad / "journal.jsonl").read_bytes().split(b"\n")
    (bad / "journal.jsonl").write_bytes(b"\n".join([lines[0], b"garbage{", *lines[1:]]))
    (tmp_path / "a" / "t" / "empty").mkdir()
    (tmp_path / "a" / "t" / "empty" / "summary.json").write_text("{")
    said: list[str] = []
    chosen = select_runs(tmp_path, warn=said.append)
    runs = chosen.runs
    assert [r.seed for r in runs] == [0] and len(runs[0].nodes) == 7
    assert any(str(good) in line and "torn" in line for line in said)
    assert any(line.startswith(f"warning: not scored: {bad}: journal line 2") for line in said)
    assert any(line.startswith("warning: not scored") and "empty" in line for line in said)
    assert all("\n" not in line for line in said)
    assert {(row["run"], row["status"]) for row in chosen.not_scored} == {
        (str(bad), "unreadable"), (str(tmp_path / "a" / "t" / "empty"), "unreadable")}
    assert (good / "journal.jsonl").read_bytes().endswith(b'"id": "00')  # the scorer never repairs a run


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    write_run(tmp_path / "results", "a", "t", 0, golden_steps(), baseline_test=12.0, best_test=5.0)
    for args, expected in [
        ([str(tmp_path / "nope")], "does not exist"),
        ([str(tmp_path / "results"), "--out", str(tmp_path / "results" / "x")], "inside the results"),
        ([str(tmp_path / "results"), "--suite", "nosuch", "--out", str(tmp_path / "o")], "unknown suite 'nosuch'"),
        ([str(tmp_path / "results"), "--agent", "zzz", "--out", str(tmp_path / "o")], "no scorable runs matching"),
    ]:
        proc = run_cli(*args, "--no-embeddings", script="compute_agent_metrics.py")
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().splitlines()[-1].startswith("error: ") and expected in proc.stderr
        assert "Traceback" not in proc.stderr


def test_unfinished_runs_are_listed_as_not_scored_unless_asked(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, "a", "t", 0, golden_steps(), baseline_test=12.0, best_test=5.0, status="interrupted")
    said: list[str] = []
    with pytest.raises(UserError, match="no scorable runs under .* \\(1 not scored, listed above\\)"):
        select_runs(tmp_path, warn=said.append)
    assert said == [f"note: not scored: {run_dir}: status 'interrupted', not finished "
                    f"(resume it, or pass --include-unfinished)"]
    assert len(select_runs(tmp_path, warn=said.append, unfinished=True).runs) == 1


def test_run_page_tree_survives_a_deep_debug_chain(tmp_path: Path) -> None:
    from researchbench.benchmark.scoring.report import run_html

    steps = [Step("0000", "baseline", "ok", 10.0)]
    steps += [Step(f"{i:04d}", "debug", "buggy", None, [f"{i - 1:04d}"]) for i in range(1, 1500)]
    page = run_html(load_run(write_run(tmp_path, "a", "t", 0, steps, budget_steps=2000)))
    assert page.count("<ul class='tree'>") == 1500 and page.count("</ul></li>") == 1499
    assert "href='#node-1499'" in page
