"""The leaderboard page is generated from the recorded runs, never typed (issue 27)."""

from __future__ import annotations

from pathlib import Path

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
