"""What must hold before a run may start, checked without writing anything: one home for the checks
a single run makes at start-up and a sweep makes for every job before the first one starts.

Each check raises `UserError` with the one line a user sees (exit 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from researchbench.benchmark.common.domains import out_of_range
from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.contract.agent_api import AgentSpec
from researchbench.benchmark.executors.base import config_of
from researchbench.benchmark.llm.credentials import missing_credentials
from researchbench.benchmark.plugins.manager import Registry

if TYPE_CHECKING:
    from researchbench.benchmark.tasks.manifest import TaskSpec


def llm_problem(agent_spec: AgentSpec, cfg: DictConfig) -> str:
    """Why this LLM agent cannot call its model (no API key...), or "" when it can or needs none."""
    if not agent_spec.uses_llm:
        return ""
    problem = missing_credentials(OmegaConf.to_object(cfg.llm))
    return f"agent '{agent_spec.name}' needs an LLM: {problem}" if problem else ""


def executor_problem(registry: Registry, cfg: DictConfig) -> str:
    """What the configured executor backend lacks (e.g. Modal credentials), found offline."""
    spec = registry.executors[cfg.executor.name]
    return spec.preflight(OmegaConf.to_object(cfg.executor)) if spec.preflight is not None else ""


def check_values(cfg: DictConfig) -> None:
    """Every value of the run (top-level keys, budget, agent, executor, llm) within the domain its config
    dataclass declares (benchmark/common/domains.py): checked first, so a bad value never reaches the task,
    the executor or the LLM, where it would fail late or pass for an outage."""
    try:
        problem = out_of_range(OmegaConf.to_object(cfg))
    except MissingMandatoryValue as exc:  # a plugin's config field without a default, left unset
        raise UserError(f"{exc.full_key} has no value; give {exc.full_key}=<value>") from None
    if problem:
        raise UserError(problem)


def gpu_problem(cfg: DictConfig, spec: TaskSpec) -> str:
    """Why the task's GPU jobs cannot run on the configured local executor: too few `executor.gpus` for
    `parallel` jobs (none at all on a machine without GPUs), or ids this machine does not have; else ""."""
    executor_cfg, wanted = OmegaConf.to_object(cfg.executor), spec.resources.gpus
    if not wanted:
        return ""
    problem = config_of(executor_cfg).gpu_problem(int(cfg.parallel), wanted, spec.name)  # "" where GPUs are remote
    if problem and spec.extends:  # a GPU-scale variant: its base is the same code at a scale a CPU runs
        problem += f" (task={spec.extends} is the same code at its CPU scale)"
    return problem


def preflight(cfg: DictConfig, registry: Registry, verified: set[str] | None = None) -> None:
    """Every start-up check of a composed run config: its values, the task, its GPUs, its prepared workspace,
    the LLM credentials, the executor's own requirements. `verified` holds tasks whose workspace already
    verified (a sweep checksums each task's data once, not once per job)."""
    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.workspace import open_prepared

    check_values(cfg)
    spec = load_task(registry.tasks[cfg.task.name])
    problem = gpu_problem(cfg, spec)
    if problem:
        raise UserError(problem)
    if verified is None or cfg.task.name not in verified:
        open_prepared(spec)
        if verified is not None:
            verified.add(cfg.task.name)
    for problem in (llm_problem(registry.agents[cfg.agent.name], cfg), executor_problem(registry, cfg)):
        if problem:
            raise UserError(problem)

