"""What `--cfg job` prints: the composed run config as the run will use it, each field with its type.

Hydra's own view shows `budget.steps: null` where the run takes the task manifest's value, so a reader
cannot tell what budget a run gets; here every budget field is resolved against the task's manifest
(the same `effective_budget` the engine uses) and says where its value comes from. The output stays
valid YAML: types and origins are comments.
"""

from __future__ import annotations

import dataclasses
import math
from enum import Enum
import re
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf

from researchbench.benchmark.plugins.manager import Registry
from researchbench.benchmark.run.config import BudgetConfig, effective_budget

INDENT = "  "


def job_config_text(cfg: DictConfig, registry: Registry) -> str:
    """The YAML of a composed run config with a `# type` comment per field and the budget resolved."""
    header = [f"# the config of this run; budget resolved against task {cfg.task.name}'s manifest; "
              "after each value: its type"]
    return "\n".join(header + _lines(cfg, "", _budget_view(cfg, registry), _unused(cfg, registry)))


def _unused(cfg: DictConfig, registry: Registry) -> dict[str, str]:
    """Top-level groups the run never reads -> why: an agent that asks no LLM ignores `llm`, so showing
    `llm.model: gpt-4o-mini` would say the run uses a model it never calls."""
    spec = registry.agents.get(str(cfg.agent.name))
    if spec is not None and not spec.uses_llm:
        return {"llm": f"not used: agent {spec.name} asks no LLM, so no llm.* setting changes this run"}
    return {}


def _budget_view(cfg: DictConfig, registry: Registry) -> dict[str, tuple[Any, str]]:
    """budget field -> (the value the run uses, where it comes from)."""
    from researchbench.benchmark.tasks.manifest import load_task

    manifest = load_task(registry.tasks[cfg.task.name]).budget
    overrides = BudgetConfig(**OmegaConf.to_container(cfg.budget, resolve=True))
    budget = effective_budget(manifest, overrides)
    view = {}
    for field in dataclasses.fields(BudgetConfig):
        if not hasattr(budget, field.name):  # a run setting with no manifest counterpart
            continue
        value = getattr(budget, field.name)
        origin = "set for this run" if getattr(overrides, field.name) is not None else "from the task manifest"
        if field.name == "test_timeout_s" and not value:
            value, origin = budget.final_test_timeout_s(), f"{origin}: 0 means 2 x step_timeout_s"
        view[field.name] = (value, origin)
    return view


def _lines(node: DictConfig, path: str, budget: dict[str, tuple[Any, str]],
           unused: dict[str, str] | None = None) -> list[str]:
    pad = INDENT * path.count(".") + (INDENT if path else "")
    lines = []
    for key in node.keys():
        child = node._get_node(key)
        kind = type_name(child)
        if not path and unused and key in unused:
            lines.append(f"{key}: null  # {kind}, {unused[key]}")
            continue
        if isinstance(child, DictConfig) and not child._is_none() and not child._is_missing() and len(child):
            lines.append(f"{pad}{key}:  # {kind}")
            lines += _lines(child, f"{path}.{key}" if path else str(key), budget)
            continue
        if path == "budget" and key in budget:
            value, origin = budget[key]
            lines.append(f"{pad}{key}: {_scalar(value)}  # {kind.removesuffix(' | None')}, {origin}")
            continue
        value = "???" if child._is_missing() else _scalar(_plain(node, key))
        lines.append(f"{pad}{key}: {value}  # {kind}")
    return lines


def _plain(node: DictConfig, key: Any) -> Any:
    value = node[key]
    return OmegaConf.to_container(value, resolve=True) if isinstance(value, (DictConfig, ListConfig)) else value


def _scalar(value: Any) -> str:
    if isinstance(value, Enum):  # a choice (e.g. sweep_view): shown as it is written on the command line
        value = value.name
    if isinstance(value, float) and math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = yaml.safe_dump(value, default_flow_style=True, width=math.inf).strip()
    return text.removesuffix("\n...").strip()


def type_name(node: Any) -> str:
    """A node's declared type as Python spells it: `int`, `float | None`, `list[str]`, `OptunaConfig`."""
    meta = node._metadata
    declared = meta.ref_type
    if declared is Any and isinstance(node, DictConfig) and meta.object_type not in (None, dict):
        declared = meta.object_type  # a plugin's config class stored under an `Any` slot (agent, executor)
    text = declared.__name__ if isinstance(declared, type) else str(declared)
    text = re.sub(r"(?:\w+\.)+(\w+)", r"\1", text)  # typing.List[...], module paths
    text = text.replace("List[", "list[").replace("Dict[", "dict[")
    if node._is_optional() and text != "Any" and not isinstance(node, DictConfig):
        text += " | None"
    return text
