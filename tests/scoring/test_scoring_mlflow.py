"""`compute_agent_metrics.py --mlflow`: each run exported as an MLflow run into a real local store, read
back with mlflow.search_runs; re-export skips or replaces, never duplicates; nothing written into runs."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from scoring_runs import Step, write_run


def _cli(*argv: str) -> int:
    return runpy.run_path(str(REPO / "compute_agent_metrics.py"))["main"](
        [*argv, "--no-embeddings", "--no-plots", "--no-html"])


def _steps() -> list[Step]:
    return [Step("0000", "baseline", "ok", 10.0),
            Step("0001", "draft", "ok", 8.0, ["0000"], files={"model.py": "a = 8\n"}),
            Step("0002", "draft", "buggy", None, ["0000"], files={"model.py": "a = ?\n"}),
            Step("0003", "improve", "ok", 9.0, ["0001"], files={"model.py": "a = 9\n"})]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _search(store: Path):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{store / 'mlflow.db'}")
    return mlflow.search_runs(experiment_names=["researchbench"], order_by=["params.seed ASC"])


def test_runs_go_to_mlflow_once_and_are_read_back(tmp_path: Path, capsys) -> None:
    pytest.importorskip("mlflow")
    import mlflow

    results = tmp_path / "results"
    for seed in (0, 1):
        write_run(results, "aide", "toy", seed, _steps(), baseline_test=12.0, best_test=7.0 + seed,
                  config={"agent": {"name": "aide"}, "llm": {"model": "gpt-x"}, "seed": seed})
    before = _files(results)
    assert _cli(str(results), "--mlflow") == 0
    store = tmp_path / "metric_reports" / "results" / "mlruns"  # beside the metric report, by default
    assert "mlflow: 2 new, 0 updated, 0 unchanged" in capsys.readouterr().err
    runs = _search(store)
    assert list(runs["params.seed"]) == ["0", "1"]
    assert set(runs["params.agent"]) == {"aide"} and set(runs["params.task"]) == {"toy"}
    assert set(runs["params.budget"]) == {"10exp/$1/1h"} and runs["params.llm"].notna().all()
    assert list(runs["metrics.best_test"]) == [7.0, 8.0]
    assert runs["metrics.achievement"].notna().all() and runs["metrics.valid_step_ratio"].notna().all()
    client = mlflow.MlflowClient()
    first = runs["run_id"][0]
    assert [(m.step, m.value) for m in client.get_metric_history(first, "val")] == [(0, 10.0), (1, 8.0), (3, 9.0)]
    assert [m.value for m in sorted(client.get_metric_history(first, "best_val_so_far"), key=lambda m: m.step)] \
        == [10.0, 8.0, 8.0]
    artifacts = Path(client.download_artifacts(first, "", str(tmp_path / "download")))
    assert (artifacts / "best_solution" / "model.py").read_text() == "a = 8\n"
    assert "aide on toy" in (artifacts / "report.html").read_text()
    assert _files(results) == before  # scoring and export never write into the results

    assert _cli(str(results), "--mlflow") == 0  # the same export again: nothing new
    assert "mlflow: 0 new, 0 updated, 2 unchanged" in capsys.readouterr().err
    assert len(_search(store)) == 2

    summary = results / "aide" / "toy" / "seed1-10" / "summary.json"
    changed = json.loads(summary.read_text())
    changed["best"]["test"] = 6.5  # the run was re-tested: its MLflow run is replaced, not added to
    summary.write_text(json.dumps(changed))
    assert _cli(str(results), "--mlflow") == 0
    assert "mlflow: 0 new, 1 updated, 1 unchanged" in capsys.readouterr().err
    assert list(_search(store)["metrics.best_test"]) == [7.0, 6.5]


def test_a_store_given_as_a_folder_and_one_inside_the_results(tmp_path: Path, capsys) -> None:
    pytest.importorskip("mlflow")
    results = tmp_path / "results"
    write_run(results, "aide", "toy", 0, _steps(), baseline_test=12.0, best_test=7.0)
    assert _cli(str(results), "--out", str(tmp_path / "report"), "--mlflow", str(tmp_path / "tracking")) == 0
    assert len(_search(tmp_path / "tracking")) == 1
    capsys.readouterr()
    assert _cli(str(results), "--out", str(tmp_path / "report"), "--mlflow", str(results / "mlruns")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "inside the results" in err[0], err
    assert not (results / "mlruns").exists()
    assert _cli(str(results), "--out", str(tmp_path / "report"), "--mlflow", "nosuch://host") == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines()  # a URI MLflow refuses: its reason,
           if not line.startswith("note: ")]  # in one line (the scorer's notes on the runs come before the export)
    assert len(err) == 1 and err[0].startswith("error: --mlflow nosuch://host: ") and "nosuch" in err[0][30:], err


def test_without_mlflow_one_line_names_the_extra(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if not installed: find_spec answers None
    results = tmp_path / "results"
    write_run(results, "aide", "toy", 0, _steps(), baseline_test=12.0, best_test=7.0)
    assert _cli(str(results), "--mlflow") == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == "error: --mlflow needs the mlflow package: pip install -c requirements/lock.txt -e '.[tracking]'"
    assert captured.out == "" and not (tmp_path / "metric_reports").exists()  # nothing scored or written


def test_metric_names_mlflow_accepts() -> None:
    from researchbench.benchmark.scoring.mlflow_export import metric_name

    assert metric_name("pass@0.5 (val on test anchors)") == "pass_at_0.5_val_on_test_anchors"
    assert metric_name("FA (val on test anchors)") == "FA_val_on_test_anchors"
    assert metric_name("best_test") == "best_test"


def test_a_sweep_exports_as_a_parent_with_its_runs_own_times_config_and_commit(toy, tmp_path: Path, capsys) -> None:
    """A real sweep through the CLI, scored with --mlflow and read back (issue 26): one parent run for the sweep,
    a child per job with the run's own start and end, the flattened config (agent and LLM settings), the
    framework commit as mlflow.source.git.commit and the resolved config as an artifact."""
    pytest.importorskip("mlflow")
    import mlflow
    import yaml

    from conftest import FIXTURES, run_cli

    results = tmp_path / "results"
    proc = run_cli("-m", "agent=optuna,greedy", "llm=scripted", f"llm.script={FIXTURES / 'scripts' / 'toy'}",
                   "task=toy", "budget.steps=1", f"results_dir={results}", "quiet=true")
    assert proc.returncode == 0, proc.stderr
    assert _cli(str(results), "--out", str(tmp_path / "report"), "--mlflow", str(tmp_path / "store")) == 0
    assert "mlflow: 2 new" in capsys.readouterr().err
    runs = _search(tmp_path / "store")
    (parent,) = runs[runs["tags.researchbench.sweep_dir"].notna()].itertuples()
    children = runs[runs["tags.researchbench.run_dir"].notna()].sort_values("params.agent")
    assert list(children["params.agent"]) == ["greedy", "optuna"]
    assert set(children["tags.mlflow.parentRunId"]) == {parent.run_id}
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    assert set(children["tags.mlflow.source.git.commit"]) == {head}
    client = mlflow.MlflowClient()
    for _, child in children.iterrows():
        run_dir = Path(child["tags.researchbench.run_dir"])
        summary = json.loads((run_dir / "summary.json").read_text())
        info = client.get_run(child["run_id"]).info
        nodes = [json.loads(line)["node"] for line in (run_dir / "journal.jsonl").read_text().splitlines()
                 if json.loads(line)["kind"] == "finished"]
        assert info.start_time == int(min(n["created_at"] for n in nodes) * 1000)  # the run's own, not the export's
        assert info.end_time >= info.start_time + 1000 * min(1.0, summary["wall_seconds"] / 2)
        assert info.end_time <= int(summary["updated_at"] * 1000) + 1
        params = client.get_run(child["run_id"]).data.params
        assert params["agent.name"] == summary["agent"] and params["llm.model"] and "budget.steps" in params
        config = Path(client.download_artifacts(child["run_id"], "config.yaml", str(tmp_path / child["run_id"])))
        assert yaml.safe_load(config.read_text())["agent"]["name"] == summary["agent"]
    assert children["params.agent.max_debug_depth"].notna().sum() == 1  # greedy's own setting, flattened
    parent_info = client.get_run(parent.run_id).info
    assert parent_info.start_time <= min(client.get_run(r).info.start_time for r in children["run_id"])
    assert _cli(str(results), "--out", str(tmp_path / "report"), "--mlflow", str(tmp_path / "store")) == 0
    assert "mlflow: 0 new, 0 updated, 2 unchanged" in capsys.readouterr().err
    assert len(_search(tmp_path / "store")) == 3  # the parent found again, not duplicated
