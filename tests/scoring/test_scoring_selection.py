"""Which runs count: the LLM source and task version in the comparison key, repeated seeds counted once,
and runs aborted by an outage (or unfinished, or unreadable) listed as not scored everywhere."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.scoring import comparisons, tables
from researchbench.benchmark.scoring.keys import llm_source, uses_llm
from researchbench.benchmark.scoring.selection import select_runs
from conftest import run_cli
from scoring_runs import Step, write_run
from scoring_runs import golden_steps

LLM = {"model": "gpt-4o-mini", "api_base": None, "temperature": 0.0, "max_tokens": 16384, "cache": "off",
       "mock_responses": None, "script": None, "operators": {}}
MOCK = {**LLM, "mock_responses": ["I have no changes to propose for this step."]}
SCRIPTED = {**LLM, "script": "/data/scripts/toy"}


def steps(best: float) -> list[Step]:
    return [Step("0000", "baseline", "ok", 10.0), Step("0001", "draft", "ok", best, ["0000"])]


def test_llm_source_labels() -> None:
    assert llm_source({"llm": LLM}, True) == "gpt-4o-mini"
    assert llm_source({"llm": MOCK}, True).startswith("mock#")
    assert llm_source({"llm": {**MOCK, "mock_responses": ["other"]}}, True) != llm_source({"llm": MOCK}, True)
    assert llm_source({"llm": SCRIPTED}, True).startswith("scripted:toy#")
    assert llm_source({"llm": {**SCRIPTED, "script": "/elsewhere/toy"}}, True) != \
        llm_source({"llm": SCRIPTED}, True)  # another script of the same name is another source
    assert llm_source({"llm": {**LLM, "cache": "replay"}}, True) == "replay:gpt-4o-mini"
    assert llm_source({"llm": {**LLM, "model": "openai/qwen", "api_base": "http://localhost:8000/v1"}}, True) == \
        "openai/qwen@http://localhost:8000/v1"
    assert llm_source({"llm": {**LLM, "operators": {"analyze": {"model": "gpt-4o"}}}}, True) == \
        "gpt-4o-mini (analyze: gpt-4o)"
    assert llm_source({"llm": MOCK}, False) == "none"  # optuna asks no LLM, whatever llm= says


def test_mock_and_scripted_runs_never_share_a_group(tmp_path: Path) -> None:
    for source, name in ((MOCK, "mock"), (SCRIPTED, "scripted")):
        for seed in (0, 1):
            write_run(tmp_path, "greedy", "t", seed, steps(6.0), baseline_test=12.0, best_test=8.0,
                      config={"agent": {"name": "greedy"}, "llm": source}, run_id=f"{name}-{seed}")
    df = tables.with_variant(tables.runs_table(select_runs(tmp_path, warn=lambda line: None).runs))
    groups = tables.groups_table(df)
    assert len(groups) == 2 and list(groups["n"]) == [2, 2]
    assert sorted(groups["llm"].str.split("#").str[0]) == ["mock", "scripted:toy"]
    assert groups["config"].nunique() == 1  # the same agent settings: only the reply source differs
    assert sorted(df["variant"].unique()) == sorted(f"greedy [{s}]" for s in groups["llm"])
    with pytest.raises(UserError, match="different llm values .*add llm to --group-by"):
        tables.groups_table(df, ["agent", "task", "budget", "config"])


def test_a_repeated_seed_is_one_trial_unless_asked(tmp_path: Path) -> None:
    older = write_run(tmp_path / "r1", "A", "t", 0, steps(6.0), baseline_test=12.0, best_test=10.0, finished_at=100.0)
    newer = write_run(tmp_path / "r2", "A", "t", 0, steps(6.0), baseline_test=12.0, best_test=4.0, finished_at=200.0)
    write_run(tmp_path / "r1", "A", "t", 1, steps(6.0), baseline_test=12.0, best_test=8.0, finished_at=150.0)
    said: list[str] = []
    chosen = select_runs(tmp_path, warn=said.append)
    assert sorted((r.seed, r.run_dir) for r in chosen.runs)[0] == (0, newer)  # the latest by its finish time
    (note,) = chosen.notes
    assert "A on t, seed 0: 2 runs with the same settings (r1/A/t/seed0-10, r2/A/t/seed0-10)" in note
    assert "keeping the latest (r2/A/t/seed0-10)" in note and "--repeats-independent" in note
    assert f"note: {note}" in said
    assert [(r["run"], r["status"]) for r in chosen.not_scored] == [(str(older), "repeat")]
    groups = tables.groups_table(tables.runs_table(chosen.runs))
    assert groups.loc[0, "n"] == 2 and groups.loc[0, "seeds"] == "0,1"
    assert groups.loc[0, "achievement"] == pytest.approx(((20 - 4) / 20 + (20 - 8) / 20) / 2)

    both = select_runs(tmp_path, warn=lambda line: None, repeats_independent=True)
    assert not both.not_scored and "each counted as a trial" in both.notes[0]
    df = tables.runs_table(both.runs)
    assert tables.groups_table(df).loc[0, "n"] == 3
    assert sorted(zip(df["seed"], df["repeat"], df["best_test"])) == [(0, 0, 10.0), (0, 1, 4.0), (1, 0, 8.0)]


def test_repeats_pair_by_their_order_when_independent(tmp_path: Path) -> None:
    for agent, tests in (("A", (6.0, 4.0)), ("B", (8.0, 8.0))):
        for i, test in enumerate(tests):
            write_run(tmp_path / f"r{i}", agent, "t", 0, steps(6.0), baseline_test=12.0, best_test=test,
                      finished_at=100.0 + i)
    df = tables.with_variant(tables.runs_table(select_runs(tmp_path, lambda line: None, repeats_independent=True).runs))
    row = comparisons.paired_table(df, "A", "B").iloc[0]
    assert row["n"] == 2 and row["mean_diff"] == pytest.approx((0.1 + 0.2) / 2)  # (t, 0, 0) and (t, 0, 1)


def test_task_versions_are_never_pooled(tmp_path: Path) -> None:
    for seed, version, test in ((0, "1.0.0", 8.0), (1, "1.0.0", 6.0), (0, "2.0.0", 2.0)):
        write_run(tmp_path, "A", "t", seed, steps(6.0), baseline_test=12.0, best_test=test, version=version,
                  run_id=f"v{version}-{seed}")
    write_run(tmp_path, "A", "u", 0, steps(6.0), baseline_test=12.0, best_test=8.0, version="3")
    chosen = select_runs(tmp_path, warn=lambda line: None)
    assert chosen.notes == ["runs of task t used different task versions (1.0.0: 2 runs; 2.0.0: 1 run); scores of "
                            "different versions are never pooled: tables show them apart as t@1.0.0, t@2.0.0"]
    df = tables.with_variant(tables.runs_table(chosen.runs))
    assert sorted(df["task_id"].unique()) == ["t@1.0.0", "t@2.0.0", "u"]  # an unmixed task keeps its name
    assert sorted(tables.groups_table(df)["n"]) == [1, 1, 2]
    assert list(comparisons.score_pivot(df, "achievement").columns[:3]) == ["t@1.0.0", "t@2.0.0", "u"]
    with pytest.raises(UserError, match="runs of agent=A, task=t, .*different version values \\(1.0.0; 2.0.0\\)"):
        tables.groups_table(df, ["agent", "task", "budget", "llm", "config"])
    tables.groups_table(df, ["agent", "version"])  # across tasks versions differ by nature: allowed


def outage_tree(root: Path) -> None:
    write_run(root, "aide", "toy", 0, golden_steps(), baseline_test=12.0, best_test=5.0)
    write_run(root, "aide", "toy", 1, golden_steps()[:1], baseline_test=12.0, best_test=None, status="aborted",
              abort_cause="LLM endpoint unreachable: 5 calls in a row failed after retries")
    write_run(root, "aide", "toy", 2, golden_steps()[:3], baseline_test=12.0, best_test=None, status="interrupted")
    write_run(root, "greedy", "toy", 0, golden_steps()[:1], status="aborted", abort_cause="executor unavailable")


def test_aborted_runs_are_listed_as_not_scored_everywhere(tmp_path: Path) -> None:
    outage_tree(tmp_path / "results")
    proc = run_cli(str(tmp_path / "results"), "--out", str(tmp_path / "out"), "--no-embeddings", "--no-plots",
                   "--agent", "aide", script="compute_agent_metrics.py")
    assert proc.returncode == 0, proc.stderr
    assert "Not scored (2 runs, left out of every table and aggregate)" in proc.stdout
    assert "LLM endpoint unreachable: 5 calls in a row failed after retries" in proc.stdout
    assert "executor unavailable" not in proc.stdout  # greedy's run is outside --agent aide
    assert "interrupted" in proc.stdout
    with open(tmp_path / "out" / "runs.csv") as fh:
        assert [row["seed"] for row in csv.DictReader(fh)] == ["0"]  # in no table, no aggregate
    with open(tmp_path / "out" / "not_scored.csv") as fh:
        rows = {row["seed"]: row for row in csv.DictReader(fh)}
    assert rows["1"]["status"] == "aborted" and rows["1"]["cause"].startswith("LLM endpoint unreachable")
    assert rows["2"]["status"] == "interrupted"
    md = (tmp_path / "out" / "tables.md").read_text()
    assert "# Scores (1 runs scored, 2 not scored)" in md and "## Not scored" in md
    assert "LLM endpoint unreachable: 5 calls in a row failed after retries" in md
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<h2>Not scored</h2>" in html and "LLM endpoint unreachable: 5 calls in a row failed after retries" in html

    # scoring unfinished runs on request never brings an aborted one back
    proc = run_cli(str(tmp_path / "results"), "--out", str(tmp_path / "out2"), "--no-embeddings", "--no-plots",
                   "--no-html", "--include-unfinished", script="compute_agent_metrics.py")
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "out2" / "runs.csv") as fh:
        assert sorted((row["agent"], row["seed"]) for row in csv.DictReader(fh)) == [("aide", "0"), ("aide", "2")]
    with open(tmp_path / "out2" / "not_scored.csv") as fh:
        assert sorted(row["cause"] for row in csv.DictReader(fh)) == [
            "LLM endpoint unreachable: 5 calls in a row failed after retries", "executor unavailable"]


def test_a_tree_of_outages_only_is_one_line_and_exit_2(tmp_path: Path) -> None:
    outage_tree(tmp_path / "results")
    proc = run_cli(str(tmp_path / "results"), "--out", str(tmp_path / "out"), "--no-embeddings", "--agent", "greedy",
                   script="compute_agent_metrics.py")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: no scorable runs matching agent=['greedy'] under {tmp_path / 'results'} (1 not scored, listed "
        f"above); check the filters or the path")
    assert "aborted (executor unavailable)" in proc.stderr


def test_groups_come_from_what_the_run_recorded_not_from_what_is_installed(tmp_path: Path) -> None:
    """A plugin agent's run (no LLM, but llm= composed as always) is grouped the same whether or not its plugin
    can be imported when scoring (issue 26): from summary.json's `uses_llm`, or, for a run written before that
    was recorded, from the LLM calls it accounted."""
    import subprocess
    import sys

    from conftest import FIXTURES

    results = tmp_path / "results"
    config = {"agent": {"name": "random_knobs", "spread": 1.0}, "llm": LLM}
    for seed in (0, 1):
        write_run(results, "random_knobs", "t", seed, steps(6.0), baseline_test=12.0, best_test=8.0, config=config,
                  uses_llm=False)
    legacy = write_run(tmp_path / "legacy", "random_knobs", "t", 0, steps(6.0), baseline_test=12.0, best_test=8.0,
                       config=config, run_id="old")
    summary = json.loads((legacy / "summary.json").read_text())
    del summary["uses_llm"]
    (legacy / "summary.json").write_text(json.dumps({**summary, "llm": {"calls": 0}}))
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--target",
                    str(site), str(FIXTURES / "plugins" / "researchbench-knobs")], check=True)
    groups = {}
    for label, env in (("installed", {"PYTHONPATH": str(site)}), ("absent", {})):
        for root in (results, tmp_path / "legacy"):
            out = tmp_path / f"out-{label}-{root.name}"
            proc = run_cli(str(root), "--no-embeddings", "--out", str(out), env=env, script="compute_agent_metrics.py")
            assert proc.returncode == 0, proc.stderr
            groups[label, root.name] = pd.read_csv(out / "groups.csv")[["agent", "llm", "config"]].to_dict("records")
    assert groups["installed", "results"] == groups["absent", "results"]
    assert groups["installed", "legacy"] == groups["absent", "legacy"]
    assert groups["absent", "results"][0]["llm"] == "none" == groups["absent", "legacy"][0]["llm"]
    assert groups["absent", "results"][0]["config"] == groups["absent", "legacy"][0]["config"]


def test_a_run_recorded_before_uses_llm_asks_an_llm_when_it_accounted_calls() -> None:
    assert uses_llm({"llm": {"calls": 3}}) and not uses_llm({"llm": {"calls": 0}})
    assert uses_llm({"uses_llm": True, "llm": {"calls": 0}}) and not uses_llm({"uses_llm": False, "llm": {"calls": 9}})
