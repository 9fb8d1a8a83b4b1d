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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import pluggy

from benchmark.plugins.agent_api import AgentSpec

PROJECT = "researchbench"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
log = logging.getLogger(__name__)

BUILTIN_PLUGINS = ("benchmark.plugins.builtin", "agents.greedy", "agents.aide", "agents.mcts", "agents.evolutionary",
                   "agents.optuna_agent", "agents.autoresearch", "agents.adaptivesearch", "agents.ai_scientist_v1",
                   "agents.ai_scientist_v2", "agents.openevolve", "agents.react")


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


@dataclass
class Registry:
    pm: pluggy.PluginManager
    agents: dict[str, AgentSpec] = field(default_factory=dict)
    tasks: dict[str, Path] = field(default_factory=dict)
    executors: dict[str, ExecutorSpec] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # "name: reason" for plugins that failed

    def notify(self, hook: str, **kwargs: Any) -> None:
        """Call a lifecycle hook on every plugin; one plugin's exception is logged, not raised."""
        _call_each(self, hook, kwargs)


def _call_each(registry: Registry, hook: str, kwargs: dict[str, Any]) -> None:
    for impl in getattr(registry.pm.hook, hook).get_hookimpls():
        try:
            impl.function(**{k: kwargs[k] for k in impl.argnames})
        except Exception as exc:  # a broken plugin must not take the run down
            _skip(registry, f"{impl.plugin_name} ({hook})", exc)


def _skip(registry: Registry, name: str, exc: BaseException) -> None:
    registry.skipped.append(f"{name}: {exc}")
    log.warning("researchbench: skipping plugin %s: %s: %s", name, type(exc).__name__, exc)


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
    for module in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(module), name=module)
    if not os.environ.get("RESEARCHBENCH_DISABLE_ENTRYPOINTS"):
        for ep in importlib.metadata.entry_points(group=PROJECT):
            if pm.has_plugin(ep.name):
                continue
            try:
                pm.register(ep.load(), name=ep.name)
            except Exception as exc:
                _skip(registry, ep.name, exc)

    def add(table: dict, key: str, value: Any, kind: str) -> None:
        if key in table:
            log.warning("researchbench: %s '%s' registered twice; keeping the first", kind, key)
        else:
            table[key] = value

    def add_task(path: Path | str) -> None:
        path = Path(path).resolve()
        add(registry.tasks, _task_name(path), path, "task")

    _call_each(registry, "researchbench_register_agents",
               {"register": lambda spec: add(registry.agents, spec.name, spec, "agent")})
    _call_each(registry, "researchbench_register_tasks", {"register": add_task})
    _call_each(registry, "researchbench_register_executors",
               {"register": lambda spec: add(registry.executors, spec.name, spec, "executor")})
    return registry
