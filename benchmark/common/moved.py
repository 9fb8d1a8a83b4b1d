"""Old import paths and removed public names that third-party plugins and tasks use, kept for one release.

Modules: 0.1.0 installed `benchmark` and `agents` as top-level packages; both now live under the one
`researchbench` namespace (`researchbench.benchmark`, `researchbench.agents`), and some modules moved into
folders too (MOVED). No file sits at an old path: an import finder answers for every old name. The old name
then *is* the new module (same objects, so isinstance checks, monkeypatching and `from old import name`
keep working), and the importer gets a DeprecationWarning naming the new path.

`task_runtime` is not deprecated: it is the name task code imports inside every job (the harness puts the
package there), so in the harness's own process the finder hands out `researchbench.task_runtime` under it
silently, one module under both names.

Names: a module lists its removed public names in `deprecated_names(...)`, whose module-level `__getattr__`
hands out the replacement and warns where the old name is used. Both answer for one release, then go.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, NamedTuple, Sequence

RELEASED_IN = "0.1.0"  # every module path of this release imports (tests/plugins/test_moved_paths.py reads its tree from git)
NAMESPACE = "researchbench"
OLD_TOPS = ("benchmark", "agents")  # 0.1.0's top-level packages, now NAMESPACE.<top>
JOB_NAMES = ("task_runtime",)  # what jobs import; the same module as NAMESPACE.task_runtime, no warning
# 0.1.0 paths of modules that also moved inside the namespace (the rest keep their path under NAMESPACE)
MOVED = {
    "agents.operators": "researchbench.agents.kit.operators",
    "agents.prompts": "researchbench.agents.kit.prompts",
    "agents.text": "researchbench.agents.kit.text",
    "agents.tree": "researchbench.agents.kit.tree",
    "benchmark.agent_api": "researchbench.benchmark.contract.agent_api",
    "benchmark.budget": "researchbench.benchmark.run.budget",
    "benchmark.builtin_plugin": "researchbench.benchmark.plugins.builtin",
    "benchmark.commands": "researchbench.benchmark.run.commands",
    "benchmark.config": "researchbench.benchmark.run.config",
    "benchmark.data_preview": "researchbench.benchmark.tasks.data_preview",
    "benchmark.display": "researchbench.benchmark.run.display",
    "benchmark.engine": "researchbench.benchmark.run.engine",
    "benchmark.errors": "researchbench.benchmark.common.errors",
    "benchmark.executors.cgroups": "researchbench.benchmark.executors.local.cgroups",
    "benchmark.executors.gpus": "researchbench.benchmark.executors.local.gpus",
    "benchmark.executors.modal_backend": "researchbench.benchmark.executors.modal.backend",
    "benchmark.executors.modal_image": "researchbench.benchmark.executors.modal.image",
    "benchmark.executors.modal_scripts": "researchbench.benchmark.executors.modal.scripts",
    "benchmark.executors.sandbox": "researchbench.benchmark.executors.local.sandbox",
    "benchmark.experiment": "researchbench.benchmark.run.experiment",
    "benchmark.fetch": "researchbench.benchmark.tasks.fetch",
    "benchmark.final_test": "researchbench.benchmark.run.final_test",
    "benchmark.journal": "researchbench.benchmark.records.journal",
    "benchmark.leak_probe": "researchbench.benchmark.authoring.leak_probe",
    "benchmark.modal_launch": "researchbench.benchmark.launch.modal_launch",
    "benchmark.modal_runs": "researchbench.benchmark.launch.modal_runs",
    "benchmark.preflight": "researchbench.benchmark.run.preflight",
    "benchmark.requirements_check": "researchbench.benchmark.tasks.requirements_check",
    "benchmark.safefs": "researchbench.benchmark.common.safefs",
    "benchmark.scheduler": "researchbench.benchmark.run.scheduler",
    "benchmark.shipped_data": "researchbench.benchmark.tasks.shipped_data",
    "benchmark.suites": "researchbench.benchmark.tasks.suites",
    "benchmark.summary": "researchbench.benchmark.run.summary",
    "benchmark.sweep": "researchbench.benchmark.launch.sweep",
    "benchmark.sweep_table": "researchbench.benchmark.launch.sweep_table",
    "benchmark.task": "researchbench.benchmark.tasks.manifest",
    "benchmark.task_check": "researchbench.benchmark.authoring.task_check",
    "benchmark.task_template": "researchbench.benchmark.authoring.task_template",
    "benchmark.worker": "researchbench.benchmark.run.worker",
    "benchmark.workspace": "researchbench.benchmark.tasks.workspace",
}


def new_name(old: str) -> str:
    """Where a 0.1.0 module path lives now."""
    return MOVED.get(old) or f"{NAMESPACE}.{old}"


def _warn_moved(old: str, new: str, stacklevel: int) -> None:
    warnings.warn(f"{old} is deprecated and will be removed in the next release; import {new} instead",
                  DeprecationWarning, stacklevel=stacklevel + 1)


def _ours(top: str, spec: Any) -> bool:
    """Is `spec` (a top-level package the path finder found) this package's own folder, e.g. a source
    checkout's `agents/` on sys.path, rather than another project that happens to use the name?"""
    here = Path(__file__).resolve().parents[2]  # the folder that holds benchmark/, agents/, task_runtime/
    return spec.origin is not None and Path(spec.origin).resolve() == here / top / "__init__.py"


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers for the old names and loads each as its module under the namespace.

    It sits first on sys.meta_path so a source checkout's folders (on sys.path as `benchmark`, `agents`) are
    never loaded a second time under their old names. Another project's top-level `agents` (OpenAI's
    Agents SDK, say) is left alone: the finder steps aside for a top-level name it did not ship."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: Any = None) -> Any:
        top = name.partition(".")[0]
        if top not in OLD_TOPS + JOB_NAMES:
            return None
        if name == top:
            real = importlib.machinery.PathFinder.find_spec(name)
            if real is not None and not _ours(top, real):
                return None
        elif sys.modules.get(top) is not sys.modules.get(f"{NAMESPACE}.{top}"):
            return None  # `top` is someone else's package, or not ours yet
        new = importlib.util.find_spec(new_name(name))
        if new is None:
            return None
        # the new module's origin and package-ness, for runpy: `python -m benchmark.viewer` runs its __main__
        return importlib.util.spec_from_loader(name, self, origin=new.origin,
                                               is_package=new.submodule_search_locations is not None)

    def create_module(self, spec: Any) -> None:
        return None  # a placeholder; exec_module swaps in the real module

    def get_code(self, name: str) -> Any:
        """The new module's code: `python -m benchmark.tasks.lock` (runpy) runs it as __main__."""
        spec = importlib.util.find_spec(new_name(name))
        return spec.loader.get_code(spec.name) if spec and spec.loader else None  # type: ignore[attr-defined]

    def exec_module(self, module: ModuleType) -> None:
        old = module.__name__
        new = new_name(old)
        sys.modules[old] = importlib.import_module(new)  # the import system hands out what is here now
        if old.partition(".")[0] not in JOB_NAMES:
            _warn_moved(old, new, stacklevel=2)  # 1 = here, 2 = the importer


def install() -> None:
    """Answer for the old names; idempotent. First on sys.meta_path (see _OldPaths)."""
    if not any(isinstance(finder, _OldPaths) for finder in sys.meta_path):
        sys.meta_path.insert(0, _OldPaths())


def answer_as_namespaced(module_name: str) -> None:
    """Called by a source checkout's `benchmark/__init__.py` or `agents/__init__.py` when Python imports the
    folder under its old top-level name: swap in the namespaced package, so nothing loads twice."""
    install()
    new = new_name(module_name)
    sys.modules[module_name] = importlib.import_module(new)  # the import system re-reads sys.modules after exec
    _warn_moved(module_name, new, stacklevel=3)


class Lazy(NamedTuple):
    """A name to import when a deprecated alias is first used: `module`.`name`."""

    module: str
    name: str


def deprecated_names(module: str, replacements: dict[str, tuple[Any, str]]) -> Callable[[str], Any]:
    """A module `__getattr__` answering for removed names: `replacements[name] = (object, what to use now)`.

    The object may be a `Lazy("module", "name")`, imported on first use, so a light package (benchmark.llm)
    can answer for names of a heavier module without importing it. Only names missing from the module reach
    `__getattr__`, so a name that is back for real wins."""

    def __getattr__(name: str) -> Any:
        if name not in replacements:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value, instead = replacements[name]
        if isinstance(value, Lazy):
            value = getattr(importlib.import_module(value.module), value.name)
        warnings.warn(f"{module}.{name} is deprecated and will be removed in the next release; {instead}",
                      DeprecationWarning, stacklevel=2)  # 2 = the code that used the name
        return value

    return __getattr__
