"""Structured configs: the schema Hydra validates every run against, so a misspelled key is an error.

Agent, task and executor options are generated from the plugin registry (the plugin's config
dataclass is the one home of its defaults), so an installed plugin is selectable as `agent=<name>`
without any YAML. LLM presets are YAML files in configs/llm/ validated by `LLMConfig`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from researchbench.benchmark.common.domains import domain
from researchbench.benchmark.llm.config import LLMConfig
from researchbench.benchmark.plugins.manager import Registry
from researchbench.benchmark.tasks.manifest import BUDGET_FIELDS, Budget


@dataclass
class TaskConfig:
    name: str = MISSING  # a registered task; its facts come from its manifest, not from here


@dataclass
class BudgetConfig:
    """Overrides of the task manifest's budget for this run (None = the manifest's value): one per field of
    the manifest's Budget (benchmark/tasks/manifest.py; a test keeps the two in step), plus the run's own."""

    steps: Optional[int] = domain(None, ge=1)
    compute_hours: Optional[float] = domain(None, gt=0)
    usd: Optional[float] = domain(None, ge=0)
    step_timeout_s: Optional[float] = domain(None, gt=0)
    test_timeout_s: Optional[float] = domain(None, ge=0)  # 0: twice step_timeout_s
    max_unexecuted_in_a_row: int = domain(10, ge=1)  # stop when this many steps in a row spend no experiment


class SweepView(Enum):
    """What a sweep (`-m`) prints while its runs go on (benchmark/launch/sweep_output.py)."""

    auto = "auto"  # compact from COMPACT_FROM jobs on, labelled lines below that
    lines = "lines"  # every run's lines, each behind its run label
    compact = "compact"  # one updating line per run; full output in each job's run.log


@dataclass
class RunConfig:
    agent: Any = MISSING
    task: TaskConfig = MISSING
    executor: Any = MISSING
    llm: LLMConfig = MISSING
    seed: int = domain(0, ge=0, le=2**32 - 1)  # task drivers seed numpy with it
    results_dir: str = "results"
    run_id: Optional[str] = None  # default: seed<seed>-<hash of the config>, so the same command resumes
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    quiet: bool = False  # no per-step progress lines and no live view: the banner and the summary only
    parallel: int = domain(1, ge=1)  # experiments in flight at once (K); each job gets the task's resources.cpus
    sweep_view: SweepView = SweepView.auto  # how a sweep shows its runs; changes nothing a run does


def register_configs(registry: Registry) -> None:
    """Put the schema and every registered agent, task and executor into Hydra's ConfigStore."""
    cs = ConfigStore.instance()
    cs.store(name="run_schema", node=RunConfig)
    cs.store(group="llm", name="base_llm", node=LLMConfig)
    for name, spec in registry.agents.items():
        cs.store(group="agent", name=name, node=spec.config_class)
    for name in registry.tasks:
        cs.store(group="task", name=name, node=TaskConfig(name=name))
    for name, spec in registry.executors.items():
        cs.store(group="executor", name=name, node=spec.config_class)


def effective_budget(manifest: Budget, overrides: BudgetConfig) -> Budget:
    """The manifest's budget with this run's overrides applied."""
    changes = {k: getattr(overrides, k) for k in BUDGET_FIELDS if getattr(overrides, k) is not None}
    return Budget(**{**manifest.__dict__, **changes})


def config_hash(cfg: DictConfig) -> str:
    """A short fingerprint of everything that changes what a run does (not where it is written)."""
    plain = OmegaConf.to_container(cfg, resolve=True)
    for key in ("results_dir", "run_id", "quiet", "sweep_view"):
        plain.pop(key, None)
    if plain.get("parallel") == 1:  # the default leaves the hash as it was before the setting existed,
        plain.pop("parallel")  # so runs started then still resume under the same command
    return hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode()).hexdigest()[:8]


def default_run_id(cfg: DictConfig) -> str:
    return cfg.run_id or f"seed{cfg.seed}-{config_hash(cfg)}"
