"""The engine asks a backend only through the `Executor` protocol (benchmark/executors/base.py): no member is
probed for with getattr/hasattr, no backend is recognised by its `sandbox_mode`, and both built-in backends
(and their configs) carry every member. A plugin's executor written to the 0.1 contract gets the defaults."""

from __future__ import annotations

import ast
import sys
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import pytest

from researchbench.benchmark.executors.base import Executor, ExecutorConfig, completed, config_of
from researchbench.benchmark.executors.local import LocalExecutor, LocalExecutorConfig
from researchbench.benchmark.executors.modal import ModalExecutor, ModalExecutorConfig
from researchbench.benchmark.run.outage import GuardedExecutor
from conftest import REPO

PROBES = ("getattr", "hasattr")
BACKEND_NAMES = ("modal", "bwrap", "local")  # a backend known by name instead of by what it does


def probing(source: str, path: str) -> list[str]:
    """Lines of `source` that probe an executor or its config: getattr/hasattr on anything named like one
    (`executor`, `executor_cfg`, `self.inner`), or `sandbox_mode` compared with a backend's name."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in PROBES and node.args:
            target = ast.unparse(node.args[0])
            if "executor" in target.lower() or target == "self.inner":
                found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = any(isinstance(s, ast.Attribute) and s.attr == "sandbox_mode" for s in sides)
            if named and any(isinstance(s, ast.Constant) and s.value in BACKEND_NAMES for s in sides):
                found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_nothing_in_benchmark_run_probes_an_executor() -> None:
    found = []
    for path in sorted((REPO / "benchmark" / "run").rglob("*.py")):
        found += probing(path.read_text(), str(path.relative_to(REPO)))
    assert found == []


def test_the_scan_finds_each_kind_of_probe() -> None:
    source = ("bind = getattr(executor, 'bind_run', None)\n"
              "if hasattr(executor_cfg, 'gpus'): pass\n"
              "x = getattr(self.inner, name)\n"
              "if self.inner.sandbox_mode == 'modal': pass\n"
              "y = getattr(overrides, 'steps')\n"  # not an executor: fine
              "if run.sandbox_mode == 'none': pass\n")  # what the run recorded, not a backend's name: fine
    assert [line.split(":")[1] for line in probing(source, "x.py")] == ["1", "2", "3", "4"]


def _members() -> list[str]:
    """Every member the protocol names: its annotated attributes and its methods."""
    attributes = [n for n in Executor.__annotations__]
    methods = [n for n, v in vars(Executor).items() if callable(v) and not n.startswith("_")]
    return attributes + methods


def test_the_protocol_has_what_the_engine_asks() -> None:
    assert {"name", "capacity", "sandbox_mode", "runs_remotely", "relocates", "submit", "exposure", "shutdown",
            "bind_run", "failure_fix"} <= set(_members())


def test_the_local_backend_satisfies_the_protocol() -> None:
    executor = LocalExecutor(LocalExecutorConfig(sandbox="none"))
    try:
        assert isinstance(executor, Executor) and completed(executor) is executor
        assert all(hasattr(executor, member) for member in _members())
        assert executor.runs_remotely is False
        executor.bind_run(None, Path("/nonexistent"))  # type: ignore[arg-type]  # nothing to bind: a no-op
        assert "executor 'local'" in executor.failure_fix()
    finally:
        executor.shutdown()


def test_the_modal_backend_satisfies_the_protocol(tmp_path: Path) -> None:
    from tests.modal_standin import StandInModal

    executor = ModalExecutor(ModalExecutorConfig(remote_python=sys.executable), client=StandInModal(tmp_path, None))
    try:
        assert isinstance(executor, Executor) and completed(executor) is executor
        assert all(hasattr(executor, member) for member in _members())
        assert executor.runs_remotely is True and executor.relocates is False
        assert "modal token info" in executor.failure_fix()
    finally:
        executor.shutdown()


def test_backend_configs_fit_themselves_to_a_run() -> None:
    local = LocalExecutorConfig(gpus=[0, 1], max_parallel=1)
    assert isinstance(local, ExecutorConfig)
    assert local.for_run(3, 0, "toy") == "" and local.max_parallel == 3 and local.gpus == []  # CPU slots
    short = LocalExecutorConfig(gpus=[0])
    assert "executor.gpus" in short.for_run(2, 1, "toy")  # two one-GPU jobs at once on one GPU
    modal = ModalExecutorConfig(max_parallel=2)
    assert modal.for_run(5, 1, "toy") == "" and modal.max_parallel == 5  # GPUs come with Modal's sandboxes
    assert modal.gpu_problem(5, 1, "toy") == ""


@dataclass
class _OldConfig:  # a plugin's config from 0.1: no ExecutorConfig base
    name: str = "old"


class _OldExecutor:
    """A plugin's executor written to the 0.1 contract: no bind_run, runs_remotely, relocates or failure_fix."""

    name, capacity, sandbox_mode = "old", 2, "none"

    def __init__(self) -> None:
        self.shut = False

    def submit(self, job: object) -> Future:
        done: Future = Future()
        done.set_result(job)
        return done

    def exposure(self, job: object) -> str:
        return ""

    def shutdown(self) -> None:
        self.shut = True


class _BindingExecutor(_OldExecutor):
    def __init__(self) -> None:
        super().__init__()
        self.bound: tuple[object, Path] | None = None

    def bind_run(self, spec: object, run_dir: Path) -> None:
        self.bound = (spec, run_dir)


def test_an_executor_of_the_0_1_contract_gets_the_defaults() -> None:
    old = _OldExecutor()
    executor = completed(old)  # type: ignore[arg-type]
    assert executor is not old and isinstance(executor, Executor)
    assert (executor.name, executor.capacity, executor.sandbox_mode) == ("old", 2, "none")
    assert executor.runs_remotely is False and executor.relocates is False
    executor.bind_run(None, Path("/run"))  # type: ignore[arg-type]
    assert executor.failure_fix().startswith("check that executor 'old' can start jobs here")
    assert executor.submit("job").result() == "job"
    executor.shutdown()
    assert old.shut
    binding = _BindingExecutor()
    completed(binding).bind_run("spec", Path("/run"))  # type: ignore[arg-type]
    assert binding.bound == ("spec", Path("/run"))  # its own bind_run is still told the run
    assert config_of(_OldConfig()).for_run(4, 1, "toy") == ""  # nothing to fit, no GPU slots here
    assert config_of(_OldConfig()).gpu_problem(4, 1, "toy") == ""


def test_the_guarded_executor_answers_for_the_whole_protocol() -> None:
    guarded = GuardedExecutor(completed(_BindingExecutor()))  # type: ignore[arg-type]
    assert all(hasattr(guarded, member) for member in _members())
    assert (guarded.name, guarded.capacity, guarded.runs_remotely, guarded.relocates) == ("old", 2, False, False)
    guarded.bind_run("spec", Path("/run"))  # type: ignore[arg-type]
    assert guarded.inner.inner.bound == ("spec", Path("/run"))  # type: ignore[attr-defined]


def test_the_modal_package_does_not_shadow_the_modal_library() -> None:
    """`researchbench.benchmark.executors.modal` is a package of ours; `import modal` inside it still means Modal's SDK."""
    sdk = pytest.importorskip("modal")
    import researchbench.benchmark.executors.modal as ours

    inside: dict[str, object] = {"__name__": "researchbench.benchmark.executors.modal.backend", "__package__": ours.__name__}
    exec("import modal", inside)  # as modal_client() does, from within the package
    assert inside["modal"] is sdk and "benchmark" not in Path(sdk.__file__ or "").parts
    assert ours is not sdk and ours.ModalExecutor is ModalExecutor
