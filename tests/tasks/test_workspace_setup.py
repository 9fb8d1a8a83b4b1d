"""Workspace preparation (benchmark.tasks.workspace) and the `python setup.py` bootstrap CLI.

Generic behaviour (idempotence, corruption, staleness, failed prepares) runs on a tiny task written
into tmp, so it is fast; determinism and the corruption round trip also run once on the real
causality task. Every workspace lives under a tmp root, never the repo's workspace/.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.tasks import lock as lock_module
from researchbench.benchmark.tasks import workspace as ws
from researchbench.benchmark.tasks.manifest import Requirement, TaskSpec, load_task
from conftest import HANG_TIMEOUT_S

REPO = Path(__file__).resolve().parents[2]
CAUSALITY = REPO / "ml_tasks" / "causality"

TINY_PREPARE = """\
import sys
from pathlib import Path
out = Path(sys.argv[1])
if (Path(__file__).parent / "FAIL").exists():
    sys.exit("prepare: the source data is unavailable")
for rel, text in {"public/train.csv": "x,y\\n1,2\\n", "test_inputs/x.csv": "x\\n3\\n", "labels/y.csv": "y\\n4\\n"}.items():
    (out / rel).parent.mkdir(parents=True, exist_ok=True)
    (out / rel).write_text(text)
"""


def tiny_task(tmp_path: Path, name: str = "tiny", version: str = "1") -> TaskSpec:
    task_dir = tmp_path / f"task-{name}"
    (task_dir / "baseline").mkdir(parents=True)
    (task_dir / "baseline" / "model.py").write_text("SLOPE = 1\n")
    (task_dir / "baseline" / "driver.py").write_text("import model\n")
    (task_dir / "description.md").write_text("# tiny\n")
    (task_dir / "prepare.py").write_text(TINY_PREPARE)
    manifest = {
        "schema": 2, "name": name, "version": version, "domain": "testing", "description": "description.md",
        "code": "baseline", "editable": ["model.py"],
        "metric": {"name": "mse", "direction": "lower", "floor": 1.0, "target": 0.0, "rationale": "test"},
        "budget": {"steps": 1, "compute_hours": 1, "step_timeout_s": 5, "usd": 0},
        "phases": {"val": ["{python}", "driver.py"], "test": ["{python}", "driver.py"]},
        "evaluator": ["{python}", "{task_dir}/evaluate.py"],
        "outputs": ["predictions.csv"],
        "prepare": ["{python}", "{task_dir}/prepare.py", "{workspace}"],
        "data": {"public": "public", "test_inputs": "test_inputs", "labels": "labels"},
    }
    (task_dir / "task.yaml").write_text(yaml.safe_dump(manifest))
    return load_task(task_dir)


def quiet(_: str) -> None:
    pass


# --- workspace_root ----------------------------------------------------------------------------------

def test_workspace_root_default_and_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("RESEARCHBENCH_WORKSPACE", raising=False)
    assert ws.workspace_root() == REPO / "workspace"
    monkeypatch.setenv("RESEARCHBENCH_WORKSPACE", str(tmp_path))
    assert ws.workspace_root() == tmp_path.resolve()
    spec = tiny_task(tmp_path)
    assert ws.prepare(spec, log=quiet).root == tmp_path.resolve() / "tiny"


# --- prepare / open_prepared on a tiny task ---------------------------------------------------------------

def test_prepare_layout_and_baseline_files(tmp_path: Path) -> None:
    spec = tiny_task(tmp_path)
    prepared = ws.prepare(spec, root=tmp_path / "w", log=quiet)
    assert prepared.root == (tmp_path / "w" / "tiny").resolve()
    assert prepared.public_dir == prepared.root / "public" and prepared.labels_dir == prepared.root / "labels"
    assert prepared.test_inputs_dir == prepared.root / "test_inputs"
    assert prepared.baseline_dir == prepared.root / "baseline"
    assert prepared.baseline_files() == {"driver.py": b"import model\n", "model.py": b"SLOPE = 1\n"}
    manifest = json.loads((prepared.root / ws.CHECKSUM_FILE).read_text())
    assert (manifest["task"], manifest["version"]) == ("tiny", "1")
    assert set(manifest["files"]) == {"public/train.csv", "test_inputs/x.csv", "labels/y.csv",
                                      "baseline/model.py", "baseline/driver.py"}
    assert (prepared.root.stat().st_mode & 0o755) == 0o755  # a sandbox user can read public data
    assert ws.open_prepared(spec, root=tmp_path / "w") == prepared


def test_prepare_is_idempotent(tmp_path: Path) -> None:
    spec = tiny_task(tmp_path)
    ws.prepare(spec, root=tmp_path, log=quiet)
    manifest = tmp_path / "tiny" / ws.CHECKSUM_FILE
    before = manifest.stat().st_mtime_ns, manifest.stat().st_ino
    lines: list[str] = []
    ws.prepare(spec, root=tmp_path, log=lines.append)
    assert (manifest.stat().st_mtime_ns, manifest.stat().st_ino) == before
    assert len(lines) == 1 and "already prepared" in lines[0]


def test_baseline_files_skip_bytecode(tmp_path: Path) -> None:
    spec = tiny_task(tmp_path)
    prepared = ws.prepare(spec, root=tmp_path, log=quiet)
    (prepared.baseline_dir / "__pycache__").mkdir()
    (prepared.baseline_dir / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0")
    assert set(prepared.baseline_files()) == {"driver.py", "model.py"}
    ws.open_prepared(spec, root=tmp_path)  # a bytecode cache is not corruption


def test_not_prepared_message(tmp_path: Path) -> None:
    spec = load_task(CAUSALITY)
    with pytest.raises(UserError) as info:
        ws.open_prepared(spec, root=tmp_path)
    assert str(info.value) == f"{tmp_path.resolve() / 'causality'} is not prepared; run `python setup.py --task causality`"


def test_not_prepared_message_names_repo_relative_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ws, "REPO_ROOT", REPO)
    spec = load_task(CAUSALITY)
    problem = ("not prepared", "")
    assert ws._message(spec, REPO / "workspace" / "causality", *problem) == \
        "workspace/causality is not prepared; run `python setup.py --task causality`"


@pytest.mark.parametrize("damage, detail", [
    (lambda root: (root / "public" / "train.csv").write_text("x,y\n1,999\n"), "public/train.csv changed"),
    (lambda root: (root / "labels" / "y.csv").unlink(), "labels/y.csv is missing"),
    (lambda root: (root / "public" / "leak.csv").write_text("y\n4\n"), "public/leak.csv was added"),
    (lambda root: (root / "baseline" / "model.py").write_text("SLOPE = 2\n"), "baseline/model.py changed"),
    (lambda root: (root / ws.CHECKSUM_FILE).unlink(), "prepare did not finish"),
    (lambda root: (root / ws.CHECKSUM_FILE).write_text("{not json"), "unreadable"),
])
def test_corruption_is_detected_and_redone(tmp_path: Path, damage, detail: str) -> None:
    spec = tiny_task(tmp_path)
    prepared = ws.prepare(spec, root=tmp_path, log=quiet)
    original = prepared.public_dir.joinpath("train.csv").read_bytes()
    damage(prepared.root)
    with pytest.raises(UserError) as info:
        ws.open_prepared(spec, root=tmp_path)
    message = str(info.value)
    assert "\n" not in message and "is corrupted (" in message and detail in message
    assert message.endswith("; run `python setup.py --task tiny` to redo it")
    assert detail in ws.workspace_status(spec, root=tmp_path)
    lines: list[str] = []
    ws.prepare(spec, root=tmp_path, log=lines.append)
    assert "preparing" in lines[0] and detail in lines[0]
    reopened = ws.open_prepared(spec, root=tmp_path)
    assert reopened.public_dir.joinpath("train.csv").read_bytes() == original
    assert not (reopened.public_dir / "leak.csv").exists()


def test_version_change_makes_it_stale(tmp_path: Path) -> None:
    spec = tiny_task(tmp_path)
    ws.prepare(spec, root=tmp_path, log=quiet)
    newer = dataclasses.replace(spec, version="2")
    with pytest.raises(UserError, match=r"is stale \(prepared for task version 1, the task is now version 2\); "
                                        r"run `python setup.py --task tiny` to redo it"):
        ws.open_prepared(newer, root=tmp_path)
    ws.prepare(newer, root=tmp_path, log=quiet)
    ws.open_prepared(newer, root=tmp_path)


def test_baseline_edit_in_task_dir_makes_it_stale(tmp_path: Path) -> None:
    spec = tiny_task(tmp_path)
    ws.prepare(spec, root=tmp_path, log=quiet)
    (spec.code_dir / "model.py").write_text("SLOPE = 3\n")
    with pytest.raises(UserError, match="is stale .*baseline code or prepare script changed"):
        ws.open_prepared(spec, root=tmp_path)
    prepared = ws.prepare(spec, root=tmp_path, log=quiet)
    assert prepared.baseline_files()["model.py"] == b"SLOPE = 3\n"


def test_force_redoes(tmp_path: Path) -> None:
    spec = tiny_task(tmp_path)
    ws.prepare(spec, root=tmp_path, log=quiet)
    lines: list[str] = []
    ws.prepare(spec, root=tmp_path, force=True, log=lines.append)
    assert "(forced)" in lines[0]


def test_failed_prepare_is_one_line_and_keeps_the_old_workspace(tmp_path: Path) -> None:
    spec = tiny_task(tmp_path)
    ws.prepare(spec, root=tmp_path, log=quiet)
    (spec.task_dir / "FAIL").write_text("")
    with pytest.raises(UserError) as info:
        ws.prepare(spec, root=tmp_path, force=True, log=quiet)
    message = str(info.value)
    assert "\n" not in message and "prepare command failed (exit 1)" in message
    assert "the source data is unavailable" in message
    ws.open_prepared(spec, root=tmp_path)  # the previous, verified workspace is untouched
    assert not list(tmp_path.glob(".tiny.preparing-*"))  # no staging leftovers


def test_failed_first_prepare_leaves_nothing(tmp_path: Path) -> None:
    spec = tiny_task(tmp_path)
    (spec.task_dir / "FAIL").write_text("")
    with pytest.raises(UserError):
        ws.prepare(spec, root=tmp_path / "w", log=quiet)
    assert ws.workspace_status(spec, root=tmp_path / "w") == "not prepared"


def test_prepare_that_writes_no_labels_is_rejected(tmp_path: Path) -> None:
    spec = tiny_task(tmp_path)
    (spec.task_dir / "prepare.py").write_text(TINY_PREPARE.replace('"labels/y.csv"', '"other/y.csv"'))
    with pytest.raises(UserError, match="wrote nothing into data.labels"):
        ws.prepare(spec, root=tmp_path / "w", log=quiet)


def test_a_prepare_script_can_import_the_task_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As a task's driver and evaluator can: the harness puts it on the prepare command's PYTHONPATH."""
    monkeypatch.delenv("PYTHONPATH", raising=False)  # tests put the checkout there; the CLI does not
    spec = tiny_task(tmp_path)
    uses_runtime = "from task_runtime.datasets import write_tables\n" + TINY_PREPARE
    (spec.task_dir / "prepare.py").write_text(uses_runtime)
    ws.prepare(spec, root=tmp_path / "w", log=quiet)
    assert ws.workspace_status(spec, root=tmp_path / "w") == "prepared"


@pytest.mark.parametrize("public", ["../escape", "/abs", "baseline", "labels"])
def test_bad_data_layout_is_rejected(tmp_path: Path, public: str) -> None:
    spec = tiny_task(tmp_path)
    bad = dataclasses.replace(spec, data=dataclasses.replace(spec.data, public=public))
    with pytest.raises(UserError, match="data.public"):
        ws.prepare(bad, root=tmp_path / "w", log=quiet)


# --- the causality task: deterministic bytes, corruption round trip ------------------------------------------

def test_causality_prepare_is_deterministic_and_repairs_corruption(tmp_path: Path) -> None:
    spec = load_task(CAUSALITY)
    first = ws.prepare(spec, root=tmp_path / "a", log=quiet)
    second = ws.prepare(spec, root=tmp_path / "b", log=quiet)
    manifest = lambda p: json.loads((p.root / ws.CHECKSUM_FILE).read_text())  # noqa: E731
    assert manifest(first) == manifest(second)  # same bytes in two independent prepares
    assert {"public/train.csv", "public/val_inputs.csv", "test_inputs/test_inputs.csv",
            "labels/val_ite.csv", "labels/test_ite.csv", "baseline/driver.py", "baseline/model.py",
            "baseline/params.json"} == set(manifest(first)["files"])
    assert not any(p.name.startswith(("test", "val_ite")) for p in first.public_dir.iterdir())

    train = first.public_dir / "train.csv"
    original = train.read_bytes()
    train.write_bytes(original.replace(b"\n1,", b"\n7,", 1))
    with pytest.raises(UserError, match=r"is corrupted \(public/train.csv changed\); "
                                        r"run `python setup.py --task causality` to redo it"):
        ws.open_prepared(spec, root=tmp_path / "a")
    ws.prepare(spec, root=tmp_path / "a", log=quiet)
    assert train.read_bytes() == original
    assert manifest(ws.open_prepared(spec, root=tmp_path / "a")) == manifest(second)


# --- ensure_requirements -----------------------------------------------------------------------------------

class PipRecorder:
    def __init__(self, returncode: int = 0) -> None:
        self.calls: list[list[str]] = []
        self.returncode = returncode

    def __call__(self, argv, *args, **kwargs):
        self.calls.append(list(argv))
        return subprocess.CompletedProcess(argv, self.returncode)


def with_requirements(tmp_path: Path, *reqs: Requirement) -> TaskSpec:
    return dataclasses.replace(tiny_task(tmp_path), requirements=reqs)


def test_requirements_satisfied_installs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pip = PipRecorder()
    monkeypatch.setattr(ws.subprocess, "run", pip)
    spec = with_requirements(tmp_path, Requirement("numpy>=1.0"), Requirement("PyYAML"),
                             Requirement("surely-not-installed-pkg; python_version < '3'"))
    lines: list[str] = []
    ws.ensure_requirements(spec, log=lines.append)
    assert pip.calls == [] and "requirements satisfied" in lines[0]


def test_causality_requirements_are_satisfied_here(monkeypatch: pytest.MonkeyPatch) -> None:
    pip = PipRecorder()
    monkeypatch.setattr(ws.subprocess, "run", pip)
    ws.ensure_requirements(load_task(CAUSALITY), log=quiet)
    assert pip.calls == []


def test_missing_or_unsatisfied_requirements_are_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pip = PipRecorder()
    monkeypatch.setattr(ws.subprocess, "run", pip)
    monkeypatch.setattr(lock_module, "LOCK_PATH", tmp_path / "no-lock.txt")
    spec = with_requirements(tmp_path, Requirement("numpy>=1.0"), Requirement("surely-not-installed-pkg>=1"),
                             Requirement("numpy<1"), Requirement("another-missing-pkg", no_deps=True))
    ws.ensure_requirements(spec, log=quiet)
    assert pip.calls == [
        [sys.executable, "-m", "pip", "install", "surely-not-installed-pkg>=1", "numpy<1"],
        [sys.executable, "-m", "pip", "install", "--no-deps", "another-missing-pkg"],
    ]


def test_requirements_install_the_locked_version_through_the_lock(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A task's numbers belong to the lock: an installed version other than the locked one is replaced by
    the pin, a requirement the lock cannot satisfy keeps its specifier, and every install is constrained."""
    pip = PipRecorder()
    monkeypatch.setattr(ws.subprocess, "run", pip)
    lock = tmp_path / "lock.txt"
    lock.write_text("# python: 3.11\nnumpy==0.0.1\nPyYAML==" + importlib.metadata.version("PyYAML") + "\n")
    monkeypatch.setattr(lock_module, "LOCK_PATH", lock)
    spec = with_requirements(tmp_path, Requirement("numpy"), Requirement("pyyaml>=5"), Requirement("numpy>=1"),
                             Requirement("surely-not-installed-pkg", no_deps=True))
    ws.ensure_requirements(spec, log=quiet)
    assert pip.calls == [
        [sys.executable, "-m", "pip", "install", "-c", str(lock), "numpy==0.0.1"],
        [sys.executable, "-m", "pip", "install", "-c", str(lock), "--no-deps", "surely-not-installed-pkg"],
    ]


def test_pip_failure_is_a_user_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ws.subprocess, "run", PipRecorder(returncode=1))
    spec = with_requirements(tmp_path, Requirement("surely-not-installed-pkg"))
    with pytest.raises(UserError, match="pip install surely-not-installed-pkg` failed.*--skip-requirements"):
        ws.ensure_requirements(spec, log=quiet)


def test_invalid_requirement_string(tmp_path: Path) -> None:
    spec = with_requirements(tmp_path, Requirement("not a requirement!!"))
    with pytest.raises(UserError, match=r"'requirements\[0\]' is not a pip requirement"):
        ws.ensure_requirements(spec, log=quiet)


# --- setup.py CLI ------------------------------------------------------------------------------------------

def setup_cli(*args: str, workspace: Path, tasks_path: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "RESEARCHBENCH_WORKSPACE": str(workspace)}
    if tasks_path is not None:
        env["RESEARCHBENCH_TASKS_PATH"] = os.pathsep.join(filter(None, [str(tasks_path), env.get("RESEARCHBENCH_TASKS_PATH")]))
    return subprocess.run([sys.executable, str(REPO / "setup.py"), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=HANG_TIMEOUT_S)


def test_setup_cli_prepare_rerun_corrupt_redo(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    listed = setup_cli("--list", workspace=root)
    assert listed.returncode == 0, listed.stderr
    line = next(row for row in listed.stdout.splitlines() if row.startswith("causality "))
    assert f"version {load_task(CAUSALITY).version}" in line and "causal-inference" in line
    assert line.endswith("not prepared")

    first = setup_cli("--task", "causality", "--skip-requirements", workspace=root)
    assert first.returncode == 0, first.stderr
    assert "prepared" in first.stdout and (root / "causality" / ws.CHECKSUM_FILE).is_file()

    again = setup_cli("--task", "causality", "--skip-requirements", workspace=root)
    assert again.returncode == 0 and "already prepared" in again.stdout

    (root / "causality" / "public" / "val_inputs.csv").write_text("rep,unit\n0,0\n")
    listed = setup_cli("--list", workspace=root)
    assert "corrupted (public/val_inputs.csv changed)" in listed.stdout
    redo = setup_cli("--task", "causality", "--skip-requirements", workspace=root)
    assert redo.returncode == 0 and "preparing" in redo.stdout and "public/val_inputs.csv changed" in redo.stdout
    assert ws.workspace_status(load_task(CAUSALITY), root=root) == "prepared"


def test_setup_cli_unknown_task(tmp_path: Path) -> None:
    result = setup_cli("--task", "nope", "--skip-requirements", workspace=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: unknown task 'nope'; known tasks: ") and "causality" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_setup_cli_bad_manifest_is_one_line(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    spec = tiny_task(tasks, name="badtask")
    raw = yaml.safe_load((spec.task_dir / "task.yaml").read_text())
    raw["colour"] = "red"
    (spec.task_dir / "task.yaml").write_text(yaml.safe_dump(raw))
    result = setup_cli("--task", "badtask", "--skip-requirements", workspace=tmp_path / "ws", tasks_path=tasks)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and "'colour' is not a known key" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    listed = setup_cli("--list", workspace=tmp_path / "ws", tasks_path=tasks)
    assert listed.returncode == 0 and "badtask" in listed.stdout and "invalid manifest" in listed.stdout


# Slow: it prepares every built-in task (half a minute of CPU); `.ci/run` runs `setup.py --all` before the tests.
@pytest.mark.slow
def test_setup_cli_all_prepares_every_task(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    tiny_task(tasks, name="tinyall")
    result = setup_cli("--all", "--skip-requirements", workspace=tmp_path / "ws", tasks_path=tasks)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ws" / "tinyall" / ws.CHECKSUM_FILE).is_file()
    assert (tmp_path / "ws" / "causality" / ws.CHECKSUM_FILE).is_file()


def test_setup_cli_needs_an_action(tmp_path: Path) -> None:
    result = setup_cli(workspace=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
