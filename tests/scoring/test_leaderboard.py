"""The leaderboard page is generated from the recorded runs, never typed (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_cli

from researchbench.benchmark.scoring.leaderboard import experiments_to_gain

REPO = Path(__file__).resolve().parents[2]


def test_docs_leaderboard_is_what_the_command_writes_over_the_recordings(tmp_path: Path) -> None:
    page = tmp_path / "leaderboard.md"
    done = run_cli("examples/recorded", "--leaderboard", str(page), script="compute_agent_metrics.py",
                   env={"RESEARCHBENCH_TASKS_PATH": ""})
    assert done.returncode == 0, done.stderr
    assert page.read_text() == (REPO / "docs" / "leaderboard.md").read_text(), (
        "docs/leaderboard.md is stale: run `python compute_agent_metrics.py examples/recorded --leaderboard`")
    text = page.read_text()
    assert "## fairness (5.0.0)" in text and "| evolutionary | 1 | 0.7777 | 0.52 (0.52) | 0.52 | 3 |" in text
    row = next(line for line in text.splitlines() if "agents/evolutionary-fairness" in line)
    auc, gap, valid = (float(v) for v in row.split(" | ")[6].split(" / "))  # process metrics, from the journal
    assert 0 < auc < 1 and gap >= 0 and valid == 1.0  # every one of its 10 experiments scored


def test_experiments_to_ninety_percent_of_the_final_gain() -> None:
    higher = [(0, 0.5), (1, 0.6), (2, 0.55), (3, 0.96), (4, 1.0)]
    assert experiments_to_gain(higher, higher=True) == 3  # a gain of 0.46 of the final 0.5: past 90%
    lower = [(0, 10.0), (1, 9.0), (2, 1.5), (3, 1.0)]
    assert experiments_to_gain(lower, higher=False) == 2  # 8.5 of the final 9 (lower is better): past 90%
    assert experiments_to_gain([(0, 0.5), (1, 0.4)], higher=True) == 0  # no gain at all
    assert experiments_to_gain([], higher=True) is None


def test_a_folder_without_recordings_is_one_line(tmp_path: Path) -> None:
    for where, words in ((tmp_path / "missing", "is not a folder of recorded runs"),
                         (tmp_path, "no finished recorded run under")):
        done = run_cli(str(where), "--leaderboard", str(tmp_path / "page.md"), script="compute_agent_metrics.py")
        assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_several_seeds_of_one_agent_make_one_row_of_means() -> None:
    from researchbench.benchmark.scoring.leaderboard import Entry, markdown, standings

    def run(agent: str, seed: int, ach: float, to_gain: int | None, ran_on: str = "2.0.0") -> Entry:
        return Entry(task="toy", ran_on=ran_on, agent=agent, seed=seed, test=ach, achievement=ach, unclipped=ach,
                     gap_closed=ach, to_gain=to_gain, experiments=10, statuses={"ok": 10, "buggy": seed},
                     calls=0, prompt_tokens=0, completion_tokens=0, wall_s=100.0 * (seed + 1),
                     where=f"optuna/toy/seed{seed}")

    rows = [run("optuna", 0, 0.2, 3), run("optuna", 1, 0.4, None), run("optuna", 2, 0.3, 7),
            Entry(**{**run("greedy", 0, 0.35, 2).__dict__, "where": "headroom-greedy/toy"}),
            run("optuna", 3, 0.9, 1, ran_on="1.0.0")]  # another version of the task: listed apart, not averaged
    (task, board), = standings(rows, {"toy": "2.0.0"})[0]
    assert [s.agent for s in board] == ["greedy", "optuna"]  # 0.35 beats the mean 0.30
    optuna = board[1]
    assert optuna.n == 3 and optuna.achievement == pytest.approx(0.3) and optuna.achievement_sd == pytest.approx(0.1)
    assert optuna.to_gain == 3 and optuna.statuses == {"ok": 30, "buggy": 3} and optuna.wall_s == pytest.approx(200)
    page = markdown(rows, {"toy": "2.0.0"}, "cmd")
    assert "| optuna | 3 | 0.3 | 0.30 ± 0.10 (0.30) | 0.30 | 3 | - / - / - | buggy 3, ok 30 | 0 | 0k / 0k | 200 s | " \
           "optuna/toy (seeds 0, 1, 2) |" in page  # no journal, so no process metrics
    assert "| greedy | 1 | 0.35 | 0.35 (0.35) |" in page
    assert "| toy | 1.0.0 | 2.0.0 | optuna | optuna/toy/seed3 |" in page
