"""benchmarks/headroom.py's arithmetic and verdicts (the runs themselves are real CLI runs, measured by hand)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

spec = importlib.util.spec_from_file_location("headroom", Path(__file__).resolve().parents[2] / "benchmarks" / "headroom.py")
headroom = importlib.util.module_from_spec(spec)
sys.modules["headroom"] = headroom  # dataclasses resolve their module by name
spec.loader.exec_module(headroom)
Trial = headroom.Trial


def test_achievement_is_clipped_and_works_for_lower_is_better() -> None:
    assert headroom.achievement(0.5, floor=0.0, target=1.0) == 0.5
    assert headroom.achievement(2.0, floor=0.0, target=1.0) == 1.0
    assert headroom.achievement(-1.0, floor=0.0, target=1.0) == 0.0
    assert headroom.achievement(3.0, floor=5.0, target=1.0) == 0.5  # lower is better: floor 5, target 1
    assert headroom.achievement(None, floor=0.0, target=1.0) is None


def test_gap_closed_is_the_share_of_the_remaining_gap() -> None:
    assert math.isclose(Trial("t", 0, baseline=0.4, best=0.7).gap_closed, 0.5)
    assert Trial("t", 0, baseline=0.4, best=0.4).gap_closed == 0.0
    assert math.isclose(Trial("t", 0, baseline=0.4, best=0.1).gap_closed, -0.5)  # the tuner's best-val node did worse on test
    assert math.isnan(Trial("t", 0, baseline=1.0, best=1.0).gap_closed)  # no gap to close


def test_verdict_uses_the_median_over_seeds_and_the_baseline_room() -> None:
    trials = [Trial("a", 0, 0.3, 0.4), Trial("a", 1, 0.3, 0.9), Trial("a", 2, 0.3, 0.5),  # gaps 0.14, 0.86, 0.29
              Trial("b", 0, 0.3, 0.8), Trial("b", 1, 0.3, 0.8), Trial("b", 2, 0.3, 0.3),  # median 0.71
              Trial("c", 0, 0.7, 0.7), Trial("d", 0, error="exit 3: aborted")]
    lines, ok = headroom.report(["a", "b", "c", "d"], trials)
    rows = {line.split("|")[1].strip(): line for line in lines[2:]}
    assert rows["a"].endswith("| meets |") and "| 0.29 |" in rows["a"]
    assert "MISSES: gap closed 0.71 > 0.5" in rows["b"]
    assert "baseline 0.70 > 0.6" in rows["c"]
    assert "not measured" in rows["d"] and "aborted" in rows["d"]
    assert not ok
    assert headroom.report(["a"], trials)[1]


def test_llm_headroom_scores_recorded_runs_on_the_current_scale(tmp_path: Path, capsys) -> None:
    """benchmarks/llm_headroom.py re-scores a run against today's manifest (not the target the run recorded)
    and fails when greedy at the default budget closes more than 0.7 of the gap."""
    from researchbench.benchmark.tasks.manifest import load_task
    from scoring_runs import Step, write_run

    llm_spec = importlib.util.spec_from_file_location(
        "llm_headroom", Path(__file__).resolve().parents[2] / "benchmarks" / "llm_headroom.py")
    llm_headroom = importlib.util.module_from_spec(llm_spec)
    llm_spec.loader.exec_module(llm_headroom)
    task = load_task(Path(__file__).resolve().parents[2] / "ml_tasks" / "semi_supervised")
    floor, target = task.metric.floor, task.metric.target
    base = floor + 0.2 * (target - floor)
    steps = [Step("0000", "baseline", "ok", base), Step("0001", "improve", "ok", base + 0.1, ["0000"])]
    for agent, share in (("greedy", 0.5), ("aide", 0.95)):
        best = base + share * (target - base)
        write_run(tmp_path, agent, "semi_supervised", 0, steps, direction="higher", floor=floor, target=99.0,
                  baseline_test=base, best_test=best, budget_steps=task.budget.steps, version="0.9")
    table = {r["agent"]: r for r in llm_headroom.rows([tmp_path])}
    assert math.isclose(table["greedy"]["gap_closed"], 0.5) and math.isclose(table["aide"]["gap_closed"], 0.95)
    assert table["greedy"]["ran_on"] == "0.9" and table["greedy"]["now"] == task.version
    assert llm_headroom.main([str(tmp_path)]) == 0  # only greedy at the default budget is held to 0.7
    write_run(tmp_path / "more", "greedy", "semi_supervised", 1, steps, direction="higher", floor=floor,
              target=target, baseline_test=base, best_test=target, budget_steps=task.budget.steps)
    assert llm_headroom.main([str(tmp_path)]) == 1
    assert "(over 0.7)" in capsys.readouterr().out
