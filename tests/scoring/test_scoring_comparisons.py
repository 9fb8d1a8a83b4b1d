"""Aggregates that say what they cover: seeds needed for 80% power, means that name their shared tasks,
rankings and comparisons refused under half the tasks, FARBench domains shown incomplete."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.scoring import comparisons, tables
from researchbench.benchmark.scoring.selection import select_runs
from researchbench.benchmark.scoring.stats import pairs_for_power
from conftest import run_cli
from scoring_runs import Step, write_run


def paired_t_power(effect: float, n: int, alpha: float = 0.05) -> float:
    """Power of the two-sided one-sample t-test on n paired differences, from the noncentral t directly."""
    df, nc = n - 1, effect * math.sqrt(n)
    crit = sps.t.ppf(1 - alpha / 2, df)
    return float(sps.nct.sf(crit, df, nc) + sps.nct.cdf(-crit, df, nc))


@pytest.mark.parametrize("diffs", [[0.1, 0.12, 0.08], [0.1, -0.05, 0.2], [0.2, 0.5, -0.1, 0.3], [1.0, 2.0]])
def test_pairs_for_power_is_the_smallest_n_reaching_80_percent(diffs: list[float]) -> None:
    n = int(pairs_for_power(diffs))
    effect = abs(np.mean(diffs)) / np.std(diffs, ddof=1)
    assert paired_t_power(effect, n) >= 0.8 and (n == 2 or paired_t_power(effect, n - 1) < 0.8)


def test_pairs_for_power_edges() -> None:
    assert math.isnan(pairs_for_power([0.3]))  # one difference has no spread
    assert pairs_for_power([0.0, 0.0, 0.0]) == math.inf  # nothing to detect
    assert pairs_for_power([0.1, 0.1, 0.1]) == 2  # no spread: the smallest t-test
    assert pairs_for_power([0.1, 0.11, 0.12]) == 3  # d = 11: statsmodels' power is NaN from n = 4 on; still 3


def _tree(root: Path, specs) -> list:
    for agent, task, seed, test in specs:
        write_run(root, agent, task, seed, [Step("0000", "baseline", "ok", 10.0), Step("0001", "draft", "ok", 6.0,
                                                                                      ["0000"])],
                  baseline_test=12.0, best_test=test, domain=f"d-{task}", run_id=f"seed{seed}")
    return select_runs(root, warn=lambda line: None).runs


def test_three_seeds_too_few_says_how_many(tmp_path: Path) -> None:
    # achievement differences 0.1, -0.05, 0.2 (mse / 20): a real but noisy edge for A
    df = tables.with_variant(tables.runs_table(_tree(tmp_path, [
        ("A", "t", 0, 6.0), ("A", "t", 1, 9.0), ("A", "t", 2, 4.0),
        ("B", "t", 0, 8.0), ("B", "t", 1, 8.0), ("B", "t", 2, 8.0)])))
    table = comparisons.paired_table(df, "A", "B")
    (overall,) = [row for _, row in table.iterrows()]  # one shared task: no separate per-task row
    needed = pairs_for_power([0.1, -0.05, 0.2])
    assert needed > 3 and overall["seeds_needed_80"] == needed and overall["scope"] == "all shared tasks (1)"
    assert overall["n"] == 3 and overall["seeds_per_task"] == 3
    assert overall["power"] == f"too few seeds: about {needed:g} per task detect this difference at 80% power"
    assert overall["sd_diff"] == pytest.approx(np.std([0.1, -0.05, 0.2], ddof=1))


def test_seeds_needed_per_task_over_several_tasks(tmp_path: Path) -> None:
    # B's mse is 2 worse on every pair, plus seed noise on task u: differences 0.1 x 3, 0.1, 0.11, 0.12
    specs = [("A", task, seed, 6.0) for task in "tu" for seed in range(3)]
    specs += [("B", task, seed, 8.0 + 0.2 * seed * (task == "u")) for task in "tu" for seed in range(3)]
    table = comparisons.paired_table(tables.with_variant(tables.runs_table(_tree(tmp_path, specs))), "A", "B")
    overall = table.iloc[0]
    assert overall["n"] == 6 and overall["tasks"] == 2 and overall["seeds_per_task"] == 3
    assert overall["pairs_needed"] == pairs_for_power([0.1, 0.1, 0.1, 0.1, 0.11, 0.12])
    assert overall["seeds_needed_80"] == math.ceil(overall["pairs_needed"] / 2)  # pairs spread over the tasks
    assert list(table["power"]) == ["enough seeds for 80% power"] * 3


def test_ranking_and_comparison_refused_under_half_the_tasks(tmp_path: Path) -> None:
    specs = [("A", t, 0, 6.0) for t in ("t1", "t2", "t3")] + [("B", "t3", 0, 8.0)]
    df = tables.with_variant(tables.runs_table(_tree(tmp_path / "results", specs)))
    with pytest.raises(UserError, match=r"--compare A B: at budget .* they share 1 of the 3 tasks they ran \(t3\); "
                                        r"a comparison needs at least half"):
        comparisons.paired_table(df, "A", "B")
    pivot = comparisons.score_pivot(df, "achievement")
    assert pivot["MEAN (shared tasks)"].isna().all()
    assert set(pivot["shared tasks"]) == {"1 of 3, fewer than half: not ranked"}
    assert comparisons.rank_note(df).startswith("agents are not ranked: the variants share 1 of the 3 tasks they ran (t3)")
    proc = run_cli(str(tmp_path / "results"), "--out", str(tmp_path / "out"), "--no-embeddings", "--no-plots",
                   "--compare", "A", "B", script="compute_agent_metrics.py")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: --compare A B: at budget")
    proc = run_cli(str(tmp_path / "results"), "--out", str(tmp_path / "out"), "--no-embeddings", "--no-plots",
                   script="compute_agent_metrics.py")
    assert proc.returncode == 0 and "note: agents are not ranked" in proc.stdout
    assert "agents are not ranked" in (tmp_path / "out" / "tables.md").read_text()
    # at exactly half they are ranked, over the shared tasks, which the table names
    write_run(tmp_path / "results", "B", "t2", 0, [Step("0000", "baseline", "ok", 10.0)], baseline_test=12.0,
              best_test=8.0, domain="d-t2", run_id="seed0")
    write_run(tmp_path / "results", "B", "t4", 0, [Step("0000", "baseline", "ok", 10.0)], baseline_test=12.0,
              best_test=8.0, domain="d-t4", run_id="seed0")
    df = tables.with_variant(tables.runs_table(select_runs(tmp_path / "results", warn=lambda line: None).runs))
    pivot = comparisons.score_pivot(df, "achievement")
    assert set(pivot["shared tasks"]) == {"2 of 4: t2, t3"}
    assert pivot.loc["A", "MEAN (shared tasks)"] == pytest.approx(0.7)
    assert list(comparisons.paired_table(df, "A", "B")["scope"]) == ["all shared tasks (2)", "t2", "t3"]


def _budget_tree(root: Path, specs) -> pd.DataFrame:
    for agent, steps, seed, test in specs:
        write_run(root, agent, "t", seed, [Step("0000", "baseline", "ok", 10.0), Step("0001", "draft", "ok", 6.0,
                                                                                     ["0000"])],
                  baseline_test=12.0, best_test=test, budget_steps=steps)
    return tables.with_variant(tables.runs_table(select_runs(root, warn=lambda line: None).runs))


def test_compare_at_different_budgets_names_both(tmp_path: Path) -> None:
    df = _budget_tree(tmp_path / "results", [("A", 10, s, 6.0) for s in range(2)] + [("B", 20, s, 8.0) for s in range(2)])
    (a_budget,), (b_budget,) = (sorted(set(df.loc[df["agent"] == x, "budget"])) for x in "AB")
    with pytest.raises(UserError) as caught:
        comparisons.paired_table(df, "A", "B")
    assert str(caught.value).startswith(f"--compare A B: their budgets differ (A: {a_budget}; B: {b_budget}); ")
    proc = run_cli(str(tmp_path / "results"), "--out", str(tmp_path / "out"), "--no-embeddings", "--no-plots",
                   "--no-html", "--compare", "A", "B", script="compute_agent_metrics.py")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: --compare A B: their budgets differ (A: ")


def test_compare_an_agent_run_at_two_budgets_pairs_within_each(tmp_path: Path) -> None:
    specs = [("A", steps, s, 6.0) for steps in (10, 20) for s in range(2)] + [("B", 10, s, 8.0) for s in range(2)]
    df = _budget_tree(tmp_path, specs)
    assert "A" not in set(df["variant"])  # A's runs are two variants, told apart by budget
    table = comparisons.paired_table(df, "A", "B")
    assert list(table["budget"]) == sorted(set(df.loc[df["agent"] == "B", "budget"]))  # the budget both ran
    assert table.iloc[0]["n"] == 2


def test_farbench_missing_zero_flag(tmp_path: Path) -> None:
    _tree(tmp_path / "results", [("A", "t1", 0, 6.0), ("A", "t2", 0, 6.0), ("B", "t1", 0, 8.0), ("B", "t2", 0, 8.0),
                                 ("C", "t1", 0, 4.0), ("C", "t2", 0, 4.0), ("D", "t1", 0, 4.0)])
    for flag, expected in (([], "incomplete"), (["--farbench-missing-zero"], "40")):
        out = tmp_path / f"out{len(flag)}"
        proc = run_cli(str(tmp_path / "results"), "--out", str(out), "--no-embeddings", "--no-plots", "--no-html", *flag,
                       script="compute_agent_metrics.py")
        assert proc.returncode == 0, proc.stderr
        domains = (out / "domains.csv").read_text().splitlines()
        (d_row,) = [line for line in domains if line.startswith("D,")]
        assert d_row.split(",")[3] in (expected, expected + ".0")  # variant, domain:d-t1, domain:d-t2, FARBench score


def test_compare_needs_no_package_outside_the_documented_extras(tmp_path: Path) -> None:
    """statsmodels arrives only with some tasks' requirements: --compare must not need it (issue 26)."""
    _tree(tmp_path / "results", [("A", "t", 0, 6.0), ("A", "t", 1, 9.0), ("A", "t", 2, 4.0),
                                 ("B", "t", 0, 8.0), ("B", "t", 1, 8.0), ("B", "t", 2, 8.0)])
    blocked = tmp_path / "blocked" / "statsmodels"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'statsmodels'\")\n")
    proc = run_cli(str(tmp_path / "results"), "--out", str(tmp_path / "out"), "--no-embeddings", "--no-html",
                   "--compare", "A", "B", env={"PYTHONPATH": str(tmp_path / "blocked")},
                   script="compute_agent_metrics.py")
    assert proc.returncode == 0, proc.stderr
    needed = pairs_for_power([0.1, -0.05, 0.2])
    assert f"about {needed:g} per task detect this difference at 80% power" in proc.stdout


@pytest.mark.parametrize("diffs", [[0.1, 0.12, 0.08], [0.1, -0.05, 0.2], [0.2, 0.5, -0.1, 0.3], [0.01, 0.3, -0.2]])
def test_pairs_for_power_agrees_with_statsmodels(diffs: list[float]) -> None:
    power = pytest.importorskip("statsmodels.stats.power")
    n = int(pairs_for_power(diffs))
    effect = abs(np.mean(diffs)) / np.std(diffs, ddof=1)
    solve = power.TTestPower().power
    assert solve(effect_size=effect, nobs=n, alpha=0.05) >= 0.8
    assert n == 2 or solve(effect_size=effect, nobs=n - 1, alpha=0.05) < 0.8
