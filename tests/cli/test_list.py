"""Finding things: `run_agent_benchmark.py list` and `--help` name every agent, task, LLM preset and
executor with a description and its source, without preparing anything or importing agent dependencies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from researchbench.benchmark.plugins.manager import get_registry
from researchbench.benchmark.run.catalog import llm_entries
from conftest import REPO, run_cli

HEAVY = ("litellm", "torch", "transformers", "optuna")


def _lines_of(stdout: str, heading: str) -> list[str]:
    block = stdout.split(f"{heading} (")[1].split("\n\n")[0]
    return block.splitlines()[1:]


def test_list_describes_every_builtin_and_prepares_nothing(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    proc = run_cli("list", env={"RESEARCHBENCH_WORKSPACE": str(workspace)})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "base_llm" not in proc.stdout
    assert not [line for line in proc.stdout.splitlines() if "(no description)" in line or "(manifest" in line]
    registry = get_registry()
    agents = _lines_of(proc.stdout, "agents")
    assert [line.split()[0] for line in agents] == sorted(registry.agents)
    assert all(line.endswith("[built-in]") for line in agents)
    optuna = next(line for line in agents if line.split()[0] == "optuna")
    assert registry.agents["optuna"].description in optuna
    tasks = _lines_of(proc.stdout, "tasks")
    causality = tasks.index(next(line for line in tasks if line.split()[0] == "causality"))
    assert tasks[causality].endswith("Causality: individual treatment effects on IHDP [built-in]")
    assert tasks[causality + 1].split() == "area causal-inference; metric pehe, lower is better; suites: none".split()
    effect = tasks.index(next(line for line in tasks if line.split()[0] == "causal_effect"))
    assert tasks[effect + 1].split() == "area causal-inference; metric pehe, lower is better; suites: lite".split()
    toy = next(line for line in tasks if line.split()[0] == "toy")  # from the tests' $RESEARCHBENCH_TASKS_PATH
    assert toy.split(None, 2)[1:] == ["no", toy.split(None, 2)[2]]  # the prepared column: nothing is prepared
    assert toy.split(None, 2)[2].startswith("Predict y for each x. [$RESEARCHBENCH_TASKS_PATH (")
    llms = [line.split()[0] for line in _lines_of(proc.stdout, "llms")]
    assert "openai" in llms and "scripted" in llms
    executors = _lines_of(proc.stdout, "executors")
    assert [line.split()[0] for line in executors] == ["local", "modal"]
    assert not workspace.exists(), "listing tasks must not prepare them"


def test_list_imports_no_agent_dependency() -> None:
    probe = ("import runpy, sys\n"
             "sys.argv = ['run_agent_benchmark.py', 'list']\n"
             "try:\n    runpy.run_path('run_agent_benchmark.py', run_name='__main__')\n"
             "except SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
             f"print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules])\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "HEAVY []"


def test_list_one_kind_and_a_misspelled_kind() -> None:
    proc = run_cli("list", "executor")
    assert proc.returncode == 0 and proc.stdout.startswith("executors (executor=NAME):")
    assert "agents (" not in proc.stdout
    proc = run_cli("list", "agnts")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == ("error: cannot list 'agnts': did you mean 'agents'? choose among agents, tasks, "
                                   "llms, executors (or none for all)")


def test_help_names_every_option_and_points_at_list() -> None:
    proc = run_cli("--help")
    assert proc.returncode == 0
    assert "python run_agent_benchmark.py list [agents|tasks|llms|executors]" in proc.stdout
    agent_line = next(line for line in proc.stdout.splitlines() if line.strip().startswith("agent="))
    assert agent_line.split("=", 1)[1].strip().split(", ") == sorted(get_registry().agents)
    assert "base_llm" not in proc.stdout and "--cfg job" in proc.stdout


def test_llm_preset_descriptions_and_bases(tmp_path: Path) -> None:
    (tmp_path / "shared_base.yaml").write_text("temperature: 0.5\n")
    (tmp_path / "fast.yaml").write_text("defaults:\n  - shared_base\n  - _self_\n\n# A fast model. Needs KEY.\n"
                                        "# More detail.\nmodel: x/fast\n")
    (tmp_path / "bare.yaml").write_text("model: x/bare\n")
    entries = {e.name: e.description for e in llm_entries(tmp_path)}
    assert entries == {"bare": "model x/bare", "fast": "A fast model. Needs KEY."}  # a defaults base is not a preset
    assert all(e.description for e in llm_entries())


def test_list_tasks_shows_whether_each_task_is_prepared(tmp_path: Path) -> None:
    """Issue 26 (new user 7): a "prepared" column (yes, no, stale, corrupted) read from each workspace's
    checksum file, with the command that prepares one; listing itself prepares nothing."""
    import json

    from researchbench.benchmark.tasks.workspace import CHECKSUM_FILE

    env = {"RESEARCHBENCH_WORKSPACE": str(tmp_path / "ws")}

    def toy_state() -> tuple[str, list[str]]:
        proc = run_cli("list", "tasks", env=env)
        assert proc.returncode == 0, proc.stderr
        lines = _lines_of(proc.stdout, "tasks")
        assert lines[0].split() == ["prepared"]
        return next(line for line in lines if line.split()[0] == "toy").split()[1], lines

    state, lines = toy_state()
    assert state == "no" and lines[-1].strip() == "(to prepare a task (no, stale or corrupted): python setup.py --task NAME)"
    assert not (tmp_path / "ws").exists()
    assert run_cli("--task", "toy", script="setup.py", env=env).returncode == 0
    assert toy_state()[0] == "yes"
    checksums = tmp_path / "ws" / "toy" / CHECKSUM_FILE
    record = json.loads(checksums.read_text())
    checksums.write_text(json.dumps({**record, "version": "0.0.1"}))
    assert toy_state()[0] == "stale"
    checksums.unlink()
    assert toy_state()[0] == "corrupted"
