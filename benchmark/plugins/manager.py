"""Plugins: one pluggy PluginManager; built-ins and installed packages register through the same hooks.

Hooks use the register-callback style: the host passes `register` and a plugin calls it once per
thing it provides. Every hook is documented in docs/plugins.md (a test keeps the two in sync).
Third-party packages declare an entry point in the `researchbench` group. A plugin that fails to
import or whose hook raises is skipped with a warning; it never takes the CLI down.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import pluggy

from researchbench.benchmark.contract.agent_api import AGENT_API_VERSION, AgentSpec

PROJECT = "researchbench"
BUILTIN = "built-in"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
log = logging.getLogger(__name__)

BUILTIN_PLUGINS = ("researchbench.benchmark.plugins.builtin", "researchbench.agents.greedy",
                   "researchbench.agents.aide", "researchbench.agents.mcts", "researchbench.agents.evolutionary",
                   "researchbench.agents.optuna_agent", "researchbench.agents.autoresearch",
                   "researchbench.agents.adaptivesearch", "researchbench.agents.ai_scientist_v1",
                   "researchbench.agents.ai_scientist_v2", "researchbench.agents.openevolve",
                   "researchbench.agents.react")


class HookSpecs:
    """The hooks a plugin may implement (module-level functions decorated with @hookimpl)."""

    @hookspec
    def researchbench_register_agents(self, register: Callable[[AgentSpec], None]) -> None:
        """Register agents: call register(AgentSpec(...)) once per agent."""

    @hookspec
    def researchbench_register_tasks(self, register: Callable[[Path], None]) -> None:
        """Register tasks: call register(path) with a folder holding a task.yaml."""

    @hookspec
    def researchbench_register_executors(self, register: Callable[[ExecutorSpec], None]) -> None:
        """Register executor backends: call register(ExecutorSpec(...))."""

    @hookspec
    def researchbench_on_node(self, node: dict[str, Any], run: dict[str, Any]) -> None:
        """Called after every finished node with its journal record and the run's identity."""

    @hookspec
    def researchbench_on_run_end(self, summary: dict[str, Any], run: dict[str, Any]) -> None:
        """Called when a run ends (finished, aborted or interrupted: summary["status"]) with its summary.json."""


@dataclass(frozen=True)
class ExecutorSpec:
    name: str
    config_class: type  # dataclass with a `name: str` field; becomes the Hydra option executor=<name>
    build: Callable[[Any], Any]  # config object -> Executor
    # config object -> why this backend cannot run here ("" when it can), checked offline before a
    # run or any job of a sweep starts (e.g. missing credentials)
    preflight: Optional[Callable[[Any], str]] = None
    description: str = ""  # one line, shown by `run_agent_benchmark.py list executors`


@dataclass(frozen=True)
class PluginFailure:
    """A plugin package that could not be loaded: what to tell the user when they ask for what it provides."""

    plugin: str  # the entry point's name
    package: str  # the distribution that declared it ("module <path>" when unknown)
    error: str  # "ModuleNotFoundError: No module named 'x'"
    fix: str

    def line(self) -> str:
        return f"plugin {self.plugin} (package {self.package}) failed to load: {self.error}; {self.fix}"


def load_failure(plugin: str, package: str, exc: BaseException) -> PluginFailure:
    """Why a plugin's import failed, with the fix: a harness module it names that is gone, a missing
    dependency, or (anything else) a broken package."""
    from researchbench.benchmark.common.version import package_version

    __version__ = package_version()
    error = f"{type(exc).__name__}: {exc}".splitlines()[0]
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if missing and missing.split(".")[0] in ("benchmark", "agents", "task_runtime", "researchbench"):
        fix = (f"it imports {missing}, which researchbench {__version__} does not have; import from researchbench "
               f"instead (docs/plugins.md), or install a release of {package} made for researchbench {__version__}")
    elif missing:
        fix = f"install the module it needs (pip install {missing.split('.')[0]}), or reinstall {package} with its dependencies"
    else:
        fix = f"reinstall or upgrade {package} (pip install -U {package}); RESEARCHBENCH_DISABLE_ENTRYPOINTS=1 loads only the built-ins"
    return PluginFailure(plugin, package, error, fix)


@dataclass
class Registry:
    pm: pluggy.PluginManager
    agents: dict[str, AgentSpec] = field(default_factory=dict)
    tasks: dict[str, Path] = field(default_factory=dict)
    executors: dict[str, ExecutorSpec] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # "name: reason" for plugins that failed
    failed: list[PluginFailure] = field(default_factory=list)  # plugins whose import failed, with the fix
    # (kind, name) -> who registered it: BUILTIN, or "package <distribution>" for an installed plugin
    sources: dict[tuple[str, str], str] = field(default_factory=dict)

    def notify(self, hook: str, **kwargs: Any) -> None:
        """Call a lifecycle hook on every plugin; one plugin's exception is logged, not raised."""
        _call_each(self, hook, kwargs)


def _call_each(registry: Registry, hook: str, kwargs: dict[str, Any]) -> None:
    for impl in getattr(registry.pm.hook, hook).get_hookimpls():
        try:
            impl.function(**{k: kwargs[k] for k in impl.argnames})
        except Exception as exc:  # a broken plugin must not take the run down
            _skip(registry, f"{impl.plugin_name} ({hook})", exc)


def _register_each(registry: Registry, hook: str, register: Callable[[str, Any], None]) -> None:
    """Call a register-style hook on every plugin, telling `register` which plugin gave each item."""
    for impl in getattr(registry.pm.hook, hook).get_hookimpls():
        try:
            given = {"register": functools.partial(register, impl.plugin_name)}
            impl.function(**{k: given[k] for k in impl.argnames})
        except Exception as exc:  # a broken plugin must not take the CLI down
            _skip(registry, f"{impl.plugin_name} ({hook})", exc)


def _skip(registry: Registry, name: str, exc: BaseException) -> None:
    registry.skipped.append(f"{name}: {exc}")
    log.warning("researchbench: skipping plugin %s: %s: %s", name, type(exc).__name__, exc)


API_ATTRIBUTE = "RESEARCHBENCH_AGENT_API"  # what a plugin module sets to the AGENT_API_VERSION it was written for


def _major_minor(version: str) -> tuple[int, int] | None:
    match = re.fullmatch(r"(\d+)\.(\d+)", version.strip())
    return (int(match[1]), int(match[2])) if match else None


def api_version_problem(plugin: str, declared: Any, harness: str = AGENT_API_VERSION) -> str:
    """Why a plugin written for agent API `declared` cannot load here ("" when it can, or declares none).

    Same major and a minor no newer than the harness's: compatible (minor versions only add)."""
    if declared is None:
        return ""
    have = _major_minor(harness)
    want = _major_minor(declared) if isinstance(declared, str) else None
    if want is None or have is None:
        return (f"it declares {API_ATTRIBUTE} = {declared!r}, not a 'MAJOR.MINOR' string; set it to the agent "
                f"API version it was written for (this researchbench has {harness})")
    if want[0] == have[0] and want[1] <= have[1]:
        return ""
    fix = (f"upgrade researchbench, or install a release of {plugin} written for agent API {harness}" if want > have
           else f"install a release of {plugin} written for agent API {have[0]}.x, or port it (CHANGELOG.md, Breaking)")
    return f"it was written for agent API {declared}, this researchbench has {harness}; {fix}"


def _task_name(path: Path) -> str:
    """The manifest's name, or the folder's when the manifest is unreadable (load_task reports why).
    Every command reads every manifest here, so libyaml's loader is used where installed (10x faster)."""
    import yaml

    try:
        raw = yaml.load((path / "task.yaml").read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError):
        return path.name
    return raw["name"] if isinstance(raw, dict) and isinstance(raw.get("name"), str) else path.name


@functools.lru_cache(maxsize=1)
def get_registry() -> Registry:
    """Load built-ins, then installed plugins (unless RESEARCHBENCH_DISABLE_ENTRYPOINTS is set)."""
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(HookSpecs)
    registry = Registry(pm)
    origin = {module: BUILTIN for module in BUILTIN_PLUGINS}
    for module in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(module), name=module)
    if not os.environ.get("RESEARCHBENCH_DISABLE_ENTRYPOINTS"):
        for ep in importlib.metadata.entry_points(group=PROJECT):
            if pm.has_plugin(ep.name):
                continue
            package = ep.dist.name if ep.dist is not None else f"module {ep.value}"
            try:
                plugin = ep.load()
            except Exception as exc:  # ImportError and whatever its module raises on import
                failure = load_failure(ep.name, package, exc)
                registry.failed.append(failure)
                registry.skipped.append(f"{ep.name}: {failure.error}")
                log.warning("researchbench: skipping %s", failure.line())
                continue
            try:
                problem = api_version_problem(ep.name, getattr(plugin, API_ATTRIBUTE, None))
                if not problem:
                    pm.register(plugin, name=ep.name)
            except Exception as exc:
                _skip(registry, ep.name, exc)
                continue
            if problem:
                registry.skipped.append(f"{ep.name}: {problem}")
                log.warning("researchbench: skipping plugin %s: %s", ep.name, problem)
            else:
                origin[ep.name] = f"package {ep.dist.name}" if ep.dist is not None else f"module {ep.value}"

    def add(table: dict, kind: str, plugin: str, key: str, value: Any) -> None:
        if key in table:
            log.warning("researchbench: %s '%s' registered twice; keeping the first", kind, key)
        else:
            table[key] = value
            registry.sources[kind, key] = origin.get(plugin, plugin)

    def add_task(plugin: str, path: Path | str) -> None:
        path = Path(path).resolve()
        add(registry.tasks, "task", plugin, _task_name(path), path)

    _register_each(registry, "researchbench_register_agents",
                   lambda plugin, spec: add(registry.agents, "agent", plugin, spec.name, spec))
    _register_each(registry, "researchbench_register_tasks", add_task)
    _register_each(registry, "researchbench_register_executors",
                   lambda plugin, spec: add(registry.executors, "executor", plugin, spec.name, spec))
    return registry
