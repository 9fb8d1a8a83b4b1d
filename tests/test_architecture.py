"""The import graph of the researchbench namespace (researchbench/, benchmark/, agents/, task_runtime/) has no
circles and points one way (docs/architecture.md).

Every import counts, function-level ones and those under `if TYPE_CHECKING:` included: a type-level import
never runs, but it is still a dependency a reader follows, and a circle hidden under TYPE_CHECKING is still
a circle. Importing `a.b.c` also runs the `__init__` of `a` and `a.b`, so those are edges too.
"""

from __future__ import annotations

import ast
import graphlib
import importlib
import sys
from pathlib import Path

import pytest

from researchbench.benchmark.common.moved import MOVED, OLD_TOPS, new_name  # 0.1.0's paths: the harness must not use them

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("researchbench", "benchmark", "agents", "task_runtime")  # installed as researchbench and researchbench.<folder>
NOT_HARNESS_CODE = ("templates",)  # task templates: task code copied into new tasks, not harness modules

# The one-way order: a module may import its own package and packages of a LOWER rank, nothing else
# (siblings of the same rank stay independent of each other).
LAYERS = {
    "researchbench.benchmark.common": 0,
    "researchbench.task_runtime": 0,  # task code imports it inside jobs: it must stand alone
    "researchbench.benchmark.tasks": 1,
    "researchbench.benchmark.llm": 1,
    "researchbench.benchmark.edits": 1,  # the edit formats: agents apply them, the engine and the scorer diff with them
    "researchbench.benchmark.records": 2,
    "researchbench.benchmark.executors": 2,
    "researchbench.benchmark.contract": 3,  # the agent contract: plain types, no machinery
    "researchbench.benchmark.plugins": 4,  # the plugin manager: loads agents against the contract
    "researchbench.benchmark.scoring": 5,
    "researchbench": 5,  # the public API for plugin authors: re-exports the layers below; only agents import it
    "researchbench.agents": 6,  # built-in agents import the public API, as any plugin does
    "researchbench.benchmark.run": 6,
    "researchbench.benchmark.viewer": 6,  # reads run records and scoring's leaderboard; never the engine (a sibling)
    "researchbench.benchmark.launch": 7,
    "researchbench.benchmark.authoring": 7,
    "researchbench.benchmark.cli": 8,
    "researchbench.__main__": 9,  # `python -m researchbench`: the console script
}
OUTSIDE_LAYERS = {"researchbench.benchmark", "researchbench.agents"}  # only answer for 0.1.0's top-level names


def module_files(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the scanned packages."""
    modules = {}
    for top in SCANNED:
        files = (root / top).glob("*.py") if top == "researchbench" else (root / top).rglob("*.py")  # not its links
        for path in files:
            rel = path.relative_to(root).with_suffix("")
            if any(part in NOT_HARNESS_CODE for part in rel.parts):
                continue
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            modules[".".join(parts if top == "researchbench" else ("researchbench", *parts))] = path
    return modules


def imported_names(path: Path, module: str) -> set[str]:
    """Every dotted name `path` imports (`from a import b` gives both a and a.b), relative ones resolved."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}
    return names


def is_old_path(name: str) -> bool:
    """A 0.1.0 path (`benchmark.journal`, `agents.aide`): answered for one release, never used by the harness."""
    return name.partition(".")[0] in OLD_TOPS


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the scanned modules it runs on import (its targets and their parent packages), and any
    0.1.0 path it imports (as written: the checker reports them)."""
    graph = {}
    for module, path in modules.items():
        own = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 2)}
        names = imported_names(path, module)
        old = {n for n in names if is_old_path(n)}
        targets = {n for n in old if not any(n.startswith(o + ".") for o in old)}  # `from a.b import c`: a.b
        for name in names - old:
            parts = name.split(".")
            targets |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & modules.keys()
        graph[module] = targets - own
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle as a list of modules, or [] when there is none."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as err:
        return list(err.args[1])
    return []


def layer_of(module: str) -> str | None:
    """The LAYERS key that owns `module` (longest prefix; the namespace's own key only itself), or None."""
    owners = [key for key in LAYERS if module == key or key != "researchbench" and module.startswith(key + ".")]
    return max(owners, key=len) if owners else None


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Imports that go up or sideways in LAYERS, modules outside every layer, and uses of deprecated paths."""
    problems = []
    for module, targets in sorted(graph.items()):
        if module in OUTSIDE_LAYERS:
            continue
        source = layer_of(module)
        if source is None:
            problems.append(f"{module} is in no layer: add its package to LAYERS and docs/architecture.md")
            continue
        for target in sorted(targets):
            if is_old_path(target):
                problems.append(f"{module} imports deprecated {target}: use {new_name(target)}")
                continue
            dest = layer_of(target)
            if dest is None or dest == source:
                continue
            if LAYERS[dest] >= LAYERS[source]:
                problems.append(f"{module} ({source}, rank {LAYERS[source]}) imports {target} "
                                f"({dest}, rank {LAYERS[dest]})")
    return problems


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(module_files(ROOT))


def test_no_import_circles(graph):
    assert find_cycle(graph) == []


def test_imports_point_down_the_layers(graph):
    assert layer_violations(graph) == []


def test_the_checker_finds_a_planted_circle_and_an_upward_import():
    assert set(find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}})) == {"a", "b", "c"}
    assert find_cycle({"a": {"b"}, "b": set()}) == []
    fake = {"researchbench.benchmark.scoring.report": {"researchbench.benchmark.run.engine", "researchbench.benchmark.records.journal"},
            "researchbench.benchmark.tasks.manifest": {"researchbench.benchmark.llm.client", "benchmark.journal"}}
    problems = layer_violations(fake)
    assert any("scoring.report" in p and "run.engine" in p for p in problems)  # upward
    assert any("tasks.manifest" in p and "llm.client" in p for p in problems)  # sideways
    assert any("deprecated benchmark.journal" in p for p in problems)
    assert len(problems) == 3  # scoring -> records (downward) is fine


def test_the_graph_sees_function_level_relative_deprecated_and_typing_only_imports(tmp_path):
    pkg = tmp_path / "benchmark" / "run"
    pkg.mkdir(parents=True)
    (tmp_path / "agents").mkdir()
    for init in (tmp_path / "benchmark", pkg):
        (init / "__init__.py").write_text("")
    (pkg / "engine.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import worker\n")
    (pkg / "worker.py").write_text("from benchmark.journal import Node\n\ndef f():\n    from .engine import x\n")
    graph = import_graph(module_files(tmp_path))
    assert graph["researchbench.benchmark.run.worker"] == {"researchbench.benchmark.run.engine", "benchmark.journal"}
    assert graph["researchbench.benchmark.run.engine"] == {"researchbench.benchmark.run.worker"}  # a circle hidden under TYPE_CHECKING
    assert find_cycle(graph)


@pytest.mark.parametrize("old,new", sorted(MOVED.items()))
def test_old_import_paths_warn_and_give_the_same_objects(monkeypatch, old, new):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated.*import {new} instead"):
        legacy = importlib.import_module(old)
    current = importlib.import_module(new)
    assert legacy is current  # so every name (classes, functions, constants) is the same object
    parent, _, leaf = old.rpartition(".")
    assert getattr(sys.modules[parent], leaf) is current  # benchmark.task.load_task, agents.operators.bind work
