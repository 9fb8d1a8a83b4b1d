"""`researchbench COMMAND` (benchmark/cli/main.py), the one front door: pyproject declares the console script,
`--version` is the package's, `--help` lists every command in one line, each command dispatches (a cheap case
each), an unknown command is one line naming the choices, and run_agent_benchmark.py routes the same way."""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import pytest

import researchbench.benchmark.cli.main as front_door
from researchbench.benchmark.cli.main import COMMANDS, main, run_script
from researchbench.benchmark.cli.view import NOT_INSTALLED
from researchbench.benchmark.common.version import package_version
from tests.conftest import REPO, run_cli

COMMAND_NAMES = ["run", "list", "setup", "prepare", "check", "new", "score", "view"]


def test_pyproject_declares_the_console_script_and_it_is_the_front_door() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, attr = scripts["researchbench"].partition(":")
    assert getattr(importlib.import_module(module), attr) is main  # what the installed `researchbench` calls


@pytest.mark.parametrize("command", [["-m", "researchbench.benchmark.cli", "--version"], ["run_agent_benchmark.py", "--version"]])
def test_version_is_the_package_version_not_hydras(command: list[str]) -> None:
    proc = subprocess.run([sys.executable, *command], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"researchbench {package_version()}\n" and "Hydra" not in proc.stdout


def test_help_lists_every_command_in_one_line(capsys: pytest.CaptureFixture) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("  ") and not line.startswith("  -")]
    assert listed == COMMAND_NAMES == list(COMMANDS)
    assert "--version" in out


def test_no_command_is_the_help_and_exit_2(capsys: pytest.CaptureFixture) -> None:
    assert main([]) == 2
    assert "Commands:" in capsys.readouterr().err


@pytest.mark.parametrize("typed,hint", [("lst", "did you mean 'list'?"),
                                        ("agent=optuna", "overrides go after `run` (`researchbench run agent=optuna")])
def test_an_unknown_command_is_one_line_naming_the_choices(capsys: pytest.CaptureFixture, typed: str,
                                                           hint: str) -> None:
    assert main([typed, "task=causality"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"error: unknown command '{typed}'; {hint}")
    assert f"choose one of {', '.join(COMMAND_NAMES)}" in err


def test_list_dispatches_to_the_catalog(capsys: pytest.CaptureFixture) -> None:
    assert main(["list", "executors"]) == 0
    assert capsys.readouterr().out.startswith("executors (executor=NAME):")
    assert main(["list", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: researchbench list")


@pytest.mark.parametrize("command", ["check", "setup", "prepare", "new", "score"])
def test_each_argparse_command_has_its_own_help(capsys: pytest.CaptureFixture, command: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: researchbench {command} ")


def test_setup_and_check_need_tasks_and_refuse_an_unknown_one_in_one_line(capsys: pytest.CaptureFixture) -> None:
    assert main(["check"]) == 2
    assert capsys.readouterr().err == ("error: `researchbench check` needs task names, --all, or --suite NAME "
                                       "(e.g. `researchbench check causality`)\n")
    assert main(["prepare", "causality", "--all"]) == 2
    assert "`researchbench prepare` needs task names, --all, or --suite" in capsys.readouterr().err
    assert main(["setup", "no_such_task"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("error: unknown task 'no_such_task'; known tasks: ")


def test_setup_prepares_a_named_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("RESEARCHBENCH_WORKSPACE", str(tmp_path / "ws"))
    assert main(["setup", "toy", "--skip-requirements"]) == 0
    assert (tmp_path / "ws" / "toy").is_dir() and "toy: prepared" in capsys.readouterr().out


def test_new_creates_a_task_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["new", "my_task", "--dest", str(tmp_path)]) == 0
    assert (tmp_path / "my_task" / "task.yaml").is_file()
    assert f"created {tmp_path / 'my_task'} from the 'tabular' template" in capsys.readouterr().out
    assert main(["new", "my_task", "--dest", str(tmp_path)]) == 2  # an existing folder: one line, nothing done
    assert len(capsys.readouterr().err.splitlines()) == 1


def test_score_on_a_missing_folder_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["score", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"error: {tmp_path / 'nothing'} does not exist; pass a results directory such as "
                                "results/ or results/optuna"]


def test_run_with_a_bad_override_is_one_line_and_exit_2() -> None:
    proc = subprocess.run([sys.executable, "-m", "researchbench.benchmark.cli", "run", "task=toy", "agent=optuna", "bogus=1"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [proc.stderr.strip()] and proc.stderr.startswith("error: unknown setting 'bogus'")


def test_run_answers_help_with_the_run_commands_options(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--help"])
    assert exit_.value.code == 0 and "agent=NAME task=NAME" in capsys.readouterr().out


def test_view_without_the_viewer_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "researchbench.benchmark.viewer", None)  # absent, whether or not this version has it
    assert main(["view", "results"]) == 2
    assert capsys.readouterr().err == f"error: {NOT_INSTALLED}\n"
    assert run_script(["view"]) == 2  # python run_agent_benchmark.py view


def test_view_hands_its_arguments_to_the_viewer(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    fake = types.ModuleType("researchbench.benchmark.viewer")
    fake.main = lambda argv: calls.append(argv) or 7  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "researchbench.benchmark.viewer", fake)
    assert main(["view", "results", "--port", "0"]) == 7
    assert run_script(["view", "examples/recorded"]) == 7
    assert calls == [["results", "--port", "0"], ["examples/recorded"]]


def test_the_run_script_routes_list_and_version_and_runs_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr(front_door, "main", lambda argv: seen.append(argv) or 0)
    for argv in (["list", "tasks"], ["view"], ["agent=optuna", "task=toy"], ["-m", "seed=0,1"], ["--version"], []):
        assert run_script(argv) == 0
    assert seen == [["list", "tasks"], ["view"], ["run", "agent=optuna", "task=toy"], ["run", "-m", "seed=0,1"],
                    ["run", "--version"], ["run"]]


def test_the_root_scripts_keep_their_job_names() -> None:
    """Hydra names a job after the module of its task function; the run command pins the script's name."""
    proc = run_cli("--cfg", "hydra")
    assert proc.returncode == 0, proc.stderr
    assert "    name: run_agent_benchmark\n" in proc.stdout


def test_version_help_and_list_load_neither_hydra_nor_the_engine() -> None:
    probe = ("import sys\nfrom benchmark.cli.main import main\n"
             "assert main(['--version']) == main(['--help']) == main(['list', 'executors']) == 0\n"
             "print('LOADED', [m for m in ('hydra', 'researchbench.benchmark.run.engine', 'researchbench.benchmark.scoring.pipeline', 'torch') "
             "if m in sys.modules])\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "LOADED []"
