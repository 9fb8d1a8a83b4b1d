"""Sweeps (`-m`): every job checked before the first starts, Hydra's own flags, the joblib, submitit and
Modal launchers on two short runs, resume of a partly finished sweep, the closing table."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from conftest import compose, run_cli, run_inprocess



def _prevalidate(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int | None, str]:
    from researchbench.benchmark.cli import prevalidate

    compose("task=toy")  # registers the plugin configs, as run_agent_benchmark.py does
    try:
        prevalidate(argv)
    except SystemExit as exc:
        return int(exc.code), capsys.readouterr().err
    return None, capsys.readouterr().err


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENAI_API_KEY", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET", "MODAL_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(tmp_path / "none.toml"))


@pytest.mark.parametrize("argv, fragments", [
    (["-m", "agent=optuna,greedy", "task=toy", "seed=0,1"],
     ["job 2 of the sweep (agent=greedy task=toy seed=0)", "needs an LLM", "OPENAI_API_KEY"]),
    (["-m", "agent=optuna,gredy", "task=toy"], ["job 1 of the sweep", "unknown agent 'gredy'"]),
    (["-m", "task=toy", "budget.stepz=1,2"], ["did you mean 'budget.steps'"]),
    (["-m", "task=toy", "seed=0,1", "executor=modal"], ["executor=modal needs Modal credentials", "modal token new"]),
    (["-m", "hydra/launcher=modal", "task=toy", "seed=0,1"], ["hydra/launcher=modal", "modal token new"]),
    (["task=toy", "executor=modal"], ["executor=modal needs Modal credentials", "modal token new"]),  # one run
    (["task=toy", "-m", "seed=0,1"], ["unrecognized arguments", "before the overrides"]),
    (["-m", "hydra/launcher=jobib", "task=toy", "seed=0,1"], ["unknown hydra/launcher 'jobib'", "joblib"]),
    (["-m", "task=toy", "seed=0,1", "sweep_view=compat"], ["sweep_view=compat", "[auto, lines, compact]"]),
])
def test_a_bad_job_stops_the_sweep_before_any_job_runs(argv, fragments, toy, no_keys, capsys) -> None:
    code, err = _prevalidate(argv, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_the_readme_sweep_without_a_key_runs_nothing(toy, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = run_cli("-m", "agent=optuna,greedy", "task=toy", "seed=0,1,2", f"results_dir={tmp_path}",
                   env={"OPENAI_API_KEY": ""} if "OPENAI_API_KEY" in env else None)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "agent 'greedy' needs an LLM" in proc.stderr
    assert not list(tmp_path.rglob("journal.jsonl")), "a job ran although the sweep was invalid"


def test_multirun_cfg_job_and_config_dir(toy, tmp_path: Path, capsys) -> None:
    from researchbench.benchmark.launch.sweep import print_job_configs

    extra = tmp_path / "conf" / "agent"
    extra.mkdir(parents=True)
    (extra / "patient.yaml").write_text("defaults:\n  - optuna\n  - _self_\nn_startup_trials: 7\n")
    code, _ = _prevalidate(["--config-dir", str(tmp_path / "conf"), "-m", "agent=patient,optuna", "task=toy",
                            "--cfg", "job", "-p", "agent"], capsys)
    assert code is None
    from researchbench.benchmark.cli import prevalidate

    invocation = prevalidate(["--config-dir", str(tmp_path / "conf"), "-m", "agent=patient,optuna", "task=toy",
                              "--cfg", "job", "-p", "agent"])
    print_job_configs(invocation)
    out = capsys.readouterr().out
    assert "# job 0: agent=patient task=toy" in out and "n_startup_trials: 7" in out
    assert "# job 1: agent=optuna task=toy" in out and "n_startup_trials: 4" in out
    assert "task:" not in out  # -p agent: only that package


def test_hydra_flags_reach_hydra(toy) -> None:
    proc = run_cli("-m", "agent=optuna", "task=toy", "seed=0,1", "--cfg", "job")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("# job ") == 2 and "seed: 1" in proc.stdout
    info = run_cli("--info", "plugins")
    assert info.returncode == 0 and "ModalLauncher" in info.stdout and "JoblibLauncher" in info.stdout


def _table(out: str) -> list[list[str]]:
    lines = out[out.index("\nsweep: "):].splitlines()[2:]
    assert lines[0].split()[:3] == ["agent", "task", "seed"] and "achievement" in lines[0]
    return [line.split() for line in lines[2:] if line.strip()]


def test_joblib_sweep_resumes_a_partly_finished_sweep(toy, tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    common = ["agent=optuna", "task=toy", "budget.steps=1", f"results_dir={tmp_path}", "quiet=true"]
    first, _ = run_inprocess(*common, "seed=0")  # one job of the sweep finished before the sweep
    journal = Path(first["run_dir"]) / "journal.jsonl"
    before = journal.read_bytes()
    proc = run_cli("-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", *common, "seed=0,1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("nothing to do") == 1 and journal.read_bytes() == before
    run_lines = _run_lines(proc.stdout)
    assert {line.split("] ", 1)[0] for line in run_lines} == {"[optuna/toy/s0", "[optuna/toy/s1"}, proc.stdout
    assert "[optuna/toy/s0] run already finished; nothing to do" in run_lines
    logs = {p.parent.name: p.read_text() for p in tmp_path.glob(".multirun/*/*/run.log")}
    assert "nothing to do" in logs["0"] and "nothing to do" not in logs["1"] and "[optuna/" not in logs["1"]
    assert "summary: optuna on toy" in logs["1"]  # the full output, unlabelled, in each job's log
    rows = _table(proc.stdout)
    assert [r[:3] for r in rows] == [["optuna", "toy", "0"], ["optuna", "toy", "1"]]
    assert all(r[4] != "-" and r[6] == "$0.00" for r in rows)  # a hidden-test score and the cost
    assert rows[0][-1] == first["run_dir"]


def _run_lines(out: str) -> list[str]:
    """What the runs printed: stdout up to the sweep table, without Hydra's own launch lines."""
    return [line for line in out[:out.index("\nsweep: ")].splitlines() if line and "][HYDRA]" not in line]


def test_compact_view_shows_one_line_per_run_and_logs_the_rest(toy, tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    proc = run_cli("-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "agent=optuna", "task=toy",
                   "budget.steps=1", f"results_dir={tmp_path}", "seed=0,1", "sweep_view=compact")
    assert proc.returncode == 0, proc.stderr
    run_lines = _run_lines(proc.stdout)  # not a tty: the last state of each run, once the sweep ends
    assert run_lines == ["[optuna/toy/s0] finished, experiments 1/1, best val " + run_lines[0].split("best val ")[1],
                         "[optuna/toy/s1] finished, experiments 1/1, best val " + run_lines[1].split("best val ")[1]]
    assert "[optuna/" not in proc.stderr
    logs = sorted(tmp_path.glob(".multirun/*/*/run.log"))
    assert len(logs) == 2 and all("[0001] tune" in log.read_text() for log in logs)
    assert [r[2] for r in _table(proc.stdout)] == ["0", "1"]


def test_labelled_output_labels_stdout_stderr_and_logging(tmp_path: Path, capsys) -> None:
    import logging

    from researchbench.benchmark.launch.sweep_output import labelled_output

    handler = logging.StreamHandler(sys.stderr)
    logger = logging.getLogger("test_sweeps.labelled")
    logger.addHandler(handler)
    try:
        with labelled_output("greedy/toy/s2", tmp_path / "run.log", echo=True):
            print("one\ntwo")
            print("part", end="")
            print("ial", file=sys.stdout)
            print("oops", file=sys.stderr)
            logger.warning("careful")
            print("unterminated", end="")
    finally:
        logger.removeHandler(handler)
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["[greedy/toy/s2] one", "[greedy/toy/s2] two", "[greedy/toy/s2] partial",
                                         "[greedy/toy/s2] unterminated"]
    assert captured.err.splitlines() == ["[greedy/toy/s2] oops", "[greedy/toy/s2] careful"]
    assert (tmp_path / "run.log").read_text().splitlines() == ["one", "two", "partial", "oops", "careful",
                                                                "unterminated"]
    assert handler.stream is sys.stderr  # restored


@pytest.mark.parametrize("setting, jobs, view", [("auto", 2, "lines"), ("auto", 8, "compact"),
                                                 ("lines", 50, "lines"), ("compact", 2, "compact")])
def test_the_view_a_sweep_gets(setting: str, jobs: int, view: str) -> None:
    from researchbench.benchmark.launch.sweep_output import chosen_view

    assert chosen_view(setting, jobs) == view


def test_the_view_leaves_run_ids_and_config_groups_as_they_were(toy) -> None:
    from omegaconf import OmegaConf

    from researchbench.benchmark.run.config import default_run_id
    from researchbench.benchmark.scoring.keys import config_label

    compact, default = compose("task=toy", "sweep_view=compact"), compose("task=toy")
    assert default_run_id(compact) == default_run_id(default)
    plain = OmegaConf.to_container(default, resolve=True, enum_to_str=True)
    before_the_setting = {k: v for k, v in plain.items() if k != "sweep_view"}  # a run's config.yaml from then
    assert config_label(plain, False) == config_label(before_the_setting, False)


def test_submitit_local_sweep(toy, tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    proc = run_cli("-m", "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5", "agent=optuna",
                   "task=toy", "budget.steps=1", f"results_dir={tmp_path}", "quiet=true", "seed=3,4")
    assert proc.returncode == 0, proc.stderr
    rows = _table(proc.stdout)
    assert [r[2] for r in rows] == ["3", "4"] and all(r[4] != "-" for r in rows)
    assert len(list(tmp_path.glob("optuna/toy/*/summary.json"))) == 2


def _standin_sweep(tmp_path: Path, seeds: str):
    """An Optuna sweep on toy through `hydra/launcher=modal` with the stand-in client, results in tmp_path."""
    return run_cli("-m", "hydra/launcher=modal", "hydra.launcher.client=tests.modal_standin:from_env",
                   f"hydra.launcher.remote_python={sys.executable}", "hydra.launcher.agent_code_in_run=true",
                   "agent=optuna", "task=toy", "budget.steps=1", f"results_dir={tmp_path / 'results'}",
                   "quiet=true", seeds, env={"RESEARCHBENCH_STANDIN_ROOT": str(tmp_path / "standin")})


def _run_logs(results: Path) -> str:
    """The tail of each sweep job's run.log, for a failure message (a job's own error is only there)."""
    return "".join(f"\n--- {p}:\n{p.read_text()[-2000:]}" for p in results.glob(".multirun/*/*/run.log"))


def test_modal_launcher_on_the_stand_in(toy, tmp_path: Path) -> None:
    from tests.modal_standin import working_bwrap

    if working_bwrap() is None:
        pytest.skip("the stand-in needs a working bubblewrap")
    proc = _standin_sweep(tmp_path, "seed=0,1")
    assert proc.returncode == 0, proc.stderr + _run_logs(tmp_path / "results")
    rows = _table(proc.stdout)
    assert [r[2] for r in rows] == ["0", "1"] and all(r[4] != "-" for r in rows)
    # the runs happened in the stand-in's containers and their run dirs came back
    assert len(list((tmp_path / "standin").glob("*/sandboxes/*"))) == 2
    summaries = list((tmp_path / "results").glob("optuna/toy/*/summary.json"))
    assert len(summaries) == 2
    # agent code in the run's own sandbox was allowed knowingly; its sandbox was pinned to bubblewrap
    assert all(json.loads(p.read_text())["sandbox"] == "bwrap" for p in summaries)
    assert list((tmp_path / "results").glob(".multirun/*/0/run.log"))


HOLD_PROCESSES = "i=0; while [ $i -lt 300 ]; do sleep 600 & i=$((i+1)); done; echo holding; wait"


def test_stand_in_containers_share_the_hosts_job_uid_leases(toy, tmp_path: Path) -> None:
    """A CI failure: a host test's job held the first job uid with its processes while a stand-in
    container's root harness leased that uid too (its lease dir was its own), and the container's
    baseline could not start a process under RLIMIT_NPROC. The containers share this host's kernel, so
    they must share its leases."""
    import subprocess

    from researchbench.benchmark.executors.local.backend import LocalExecutorConfig
    from researchbench.benchmark.executors.local.job_uids import JobUids
    from tests.modal_standin import working_bwrap

    if os.geteuid() != 0 or working_bwrap() is None:
        pytest.skip("only a root harness leases job uids; the stand-in needs a working bubblewrap")
    cfg = LocalExecutorConfig()
    lease = JobUids(cfg.job_uid, cfg.job_uid_count).try_acquire()  # the uid a container would lease first
    assert lease is not None
    holder = subprocess.Popen(["/bin/sh", "-c", HOLD_PROCESSES], user=lease.uid, group=lease.uid, extra_groups=[],
                              cwd="/", stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        proc = _standin_sweep(tmp_path, "seed=0")
    finally:
        os.killpg(holder.pid, 9)
        holder.wait()
        lease.release()
    assert proc.returncode == 0, proc.stderr + _run_logs(tmp_path / "results")


def test_a_sweeps_folder_scores_exactly_its_runs(toy, tmp_path: Path, capsys) -> None:
    """Issue 26 (new user 7): the scorer takes a sweep's folder and scores the runs its jobs named, a
    resumed ("nothing to do") job's run among them, and no run of another sweep in the same results."""
    import runpy
    import time

    from conftest import REPO

    common = ["agent=optuna", "task=toy", "budget.steps=1", f"results_dir={tmp_path}", "quiet=true"]
    assert run_cli("-m", *common, "seed=0").returncode == 0
    time.sleep(1.1)  # the sweep folder is named by the second it started
    proc = run_cli("-m", *common, "seed=0,1", "sweep_view=compact")
    assert proc.returncode == 0, proc.stderr
    first, second = sorted((tmp_path / ".multirun").iterdir())
    score = runpy.run_path(str(REPO / "compute_agent_metrics.py"))["main"]
    capsys.readouterr()
    assert score([str(second), "--no-embeddings", "--no-plots", "--no-html"]) == 0
    out = capsys.readouterr().out
    assert "Raw scores (2 runs;" in out
    assert (tmp_path / "metric_reports" / f"sweep_{second.name}" / "runs.csv").is_file()
    assert score([str(first), "--no-embeddings", "--no-plots", "--no-html"]) == 0
    assert "Raw scores (1 runs;" in capsys.readouterr().out
    (second / "0" / "run.json").unlink()
    (second / "1" / "run.json").unlink()
    assert score([str(second), "--no-embeddings", "--no-plots", "--no-html"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "pass its results folder instead" in err and len(err.splitlines()) == 1


def test_the_sweep_table_is_drawn_by_rich_without_markup_or_cut_paths() -> None:
    """Issue 26 (new user 6): rich draws the table (right-aligned numbers, a rule under the heading); a cause
    quoting agent text stays literal, a long path is neither wrapped nor cut."""
    from researchbench.benchmark.launch.sweep_table import COLUMNS, render

    where = "/results/" + "x" * 300 + "/run (aborted: [bold red]boom[/] \x1b[2J)"
    text = render([("aide", "toy", "0", "0.5", "0.25", "0.71", "$0.00", where),
                   ("optuna", "toy", "12", "-", "-", "-", "-", "/r/b (no summary)")])
    head, rule, first, second = text.splitlines()
    assert head.split()[:3] == ["agent", "task", "seed"] and set(rule) == {"─"}
    assert first.endswith(where) and "[bold red]boom[/]" in first  # inert() sanitizes it when printed
    end = head.index("seed") + len("seed")  # seeds right-aligned under their heading
    assert first.index(" 0 ") + 2 == end and second.index("12") + 2 == end
    assert [c for c in COLUMNS if c in head] == list(COLUMNS)
