"""End to end on the real causality task: optuna through the CLI, greedy with scripted LLM edits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import CAUSALITY_S_LEARNER, CAUSALITY_T_LEARNER, journal_records, run_cli, run_inprocess

BAD_EDIT = """Plan: smaller trees.

params.json
<<<<<<< SEARCH
  "num_leaves": 15,
=======
  "num_leaves": 8,
>>>>>>> REPLACE
"""
T_LEARNER = f"""Plan: one model of y on (x, t) lets the trees all but ignore t; a T-learner fits each arm separately.

model.py
<<<<<<< SEARCH
{CAUSALITY_S_LEARNER}
=======
{CAUSALITY_T_LEARNER}
>>>>>>> REPLACE
"""
BUG = """Plan: clip extreme effects.

model.py
<<<<<<< SEARCH
    return treated - control
=======
    return np.clip(treated - control, low=-50, high=50)
>>>>>>> REPLACE
"""
FIX = """Plan: np.clip takes a_min/a_max, not low/high.

model.py
<<<<<<< SEARCH
    return np.clip(treated - control, low=-50, high=50)
=======
    return np.clip(treated - control, -50, 50)
>>>>>>> REPLACE
"""


def test_optuna_quick_start_through_the_cli(causality, tmp_path: Path) -> None:
    # the README's form: results_dir left at its relative default, resolved against the cwd; one tuned experiment
    # (each costs seconds of LightGBM) beside the baseline is the whole path: val, hidden test, summary, scorer
    proc = run_cli("agent=optuna", "task=causality", "budget.steps=1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "[0001] tune" in proc.stdout and "hidden test" in proc.stdout and "results:" in proc.stdout
    (run_dir,) = (tmp_path / "results" / "optuna" / "causality").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["steps"]["experiments"] == 1
    assert summary["baseline"]["val"] < summary["metric"]["floor"]
    assert summary["best"]["test"] is not None and summary["baseline"]["test"] is not None
    assert summary["sandbox"] == "bwrap"
    scored = run_cli(str(tmp_path / "results"), "--out", str(tmp_path / "report"), script="compute_agent_metrics.py")
    assert scored.returncode == 0, scored.stderr
    assert "causality" in scored.stdout and (tmp_path / "report" / "raw.csv").exists()


# About a minute of CPU, and covered twice by default: the same operator sequence (failed edit, improve, crash,
# debug) on toy in test_engine.py, and scripted edits, a crash and its fix by aide on toy in test_agents_end_to_end.py;
# the optuna quick start above keeps the real causality task in the default suite.
@pytest.mark.slow
def test_greedy_with_scripted_llm_edits_the_causality_baseline(causality, tmp_path: Path) -> None:
    summary, out = run_inprocess("agent=greedy", "task=causality", "budget.steps=3", f"results_dir={tmp_path}",
                                 llm__mock_responses=[BAD_EDIT, T_LEARNER, BUG, FIX])
    run_dir = Path(summary["run_dir"])
    nodes = [r["node"] for r in journal_records(run_dir) if r["kind"] == "finished"]
    assert [(n["operator"], n["status"]) for n in nodes] == [
        ("baseline", "ok"), ("improve", "edit_failed"), ("improve", "ok"), ("improve", "buggy"), ("debug", "ok")]
    baseline, t_learner, buggy, fixed = nodes[0], nodes[2], nodes[3], nodes[4]
    assert t_learner["primary"] < baseline["primary"]  # the T-learner really is better here
    assert "TypeError" in (run_dir / "blobs" / buggy["stderr"][:2] / buggy["stderr"][2:]).read_text()
    assert fixed["parents"] == [buggy["id"]] and fixed["primary"] is not None
    diff = (run_dir / "blobs" / t_learner["diff"][:2] / t_learner["diff"][2:]).read_text()
    assert "-    model = make_lgbm(params)" in diff and "+    treated = make_lgbm(params).fit(x_train[t_train" in diff
    assert summary["best"]["node"] in (t_learner["id"], fixed["id"])
    assert summary["best"]["test"] < summary["baseline"]["test"]
    assert summary["steps"]["experiments"] == 3
