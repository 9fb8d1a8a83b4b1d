"""A Hydra command line as a list of jobs: parsed with Hydra's own parser, a sweep (`-m a=1,2 b=x,y`)
expanded into its jobs the way Hydra's basic sweeper does, so that every job can be composed and
checked before the first one starts, and `-m ... --cfg job` can show each job's config.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, Callable, NoReturn

from omegaconf import DictConfig, OmegaConf



@dataclass
class Invocation:
    args: argparse.Namespace  # as Hydra's parser reads the command line
    jobs: list[list[str]] = field(default_factory=list)  # overrides of each job (one for a single run)
    configs: list[DictConfig] = field(default_factory=list)  # each job's composed config, once validated

    @property
    def multirun(self) -> bool:
        return bool(self.args.multirun)

    @property
    def passthrough(self) -> bool:
        """Hydra prints something and runs nothing: leave the command line to Hydra untouched."""
        a = self.args
        return bool(a.help or a.hydra_help or a.info or a.shell_completion or a.experimental_rerun)


def parse(argv: list[str], fail: Callable[[str], NoReturn]) -> Invocation:
    """Hydra's argument parser, with its usage dump replaced by one line."""
    from hydra._internal.utils import get_args_parser

    parser = get_args_parser()
    parser.error = lambda message: fail(  # type: ignore[method-assign]
        f"{message}; options such as -m and --cfg go before the overrides (see --help)")
    return Invocation(parser.parse_args(argv))


def expand(overrides: list[str]) -> list[list[str]]:
    """The jobs of a sweep: the cartesian product of its comma lists and range()/choice() sweeps."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(overrides)
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def print_job_configs(invocation: Invocation) -> None:
    """What `--cfg job|hydra|all` shows, once per job of a sweep (Hydra refuses -m with --cfg); `--cfg job`
    is benchmark/run/config_view.py's typed view with the budget resolved."""
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.run.config_view import job_config_text

    package, resolve = invocation.args.package, bool(invocation.args.resolve)
    for number, (job, cfg) in enumerate(zip(invocation.jobs, invocation.configs)):
        print(f"# job {number}: {describe(job)}")
        if invocation.args.cfg == "job" and not package:  # the same view as one run's `--cfg job`
            print(job_config_text(cfg, get_registry()))
            continue
        node = OmegaConf.select(cfg, package) if package else cfg
        if OmegaConf.is_config(node):
            print(OmegaConf.to_yaml(node, resolve=resolve), end="")
        else:
            print(node)


def describe(overrides: list[str] | tuple[str, ...]) -> str:
    """A job's overrides as a user wrote them, without Hydra's own settings."""
    shown = [o for o in overrides if not o.lstrip("+~").startswith("hydra")]
    return " ".join(shown) or "(defaults)"


def launcher_job_problem(overrides: list[str], cfg: Any) -> str:
    """What the chosen Hydra launcher refuses about one composed job of the sweep `overrides`:
    with hydra/launcher=modal, agent code in the run's own sandbox unless allowed knowingly."""
    if "hydra/launcher=modal" not in overrides:
        return ""
    from researchbench.benchmark.launch.modal_runs import AGENT_CODE_FLAG, placement_problem

    flags = [o.split("=", 1)[1] for o in overrides if o.startswith(f"{AGENT_CODE_FLAG}=")]
    allowed = any(value.strip().lower() == "true" for value in flags)
    return placement_problem(str(cfg.executor.name), allowed)


def launcher_problem(overrides: list[str]) -> str:
    """What the chosen Hydra launcher lacks (Modal credentials for hydra/launcher=modal, present and
    accepted by Modal), found before the first job starts."""
    if "hydra/launcher=modal" not in overrides or any(o.startswith("hydra.launcher.client=") for o in overrides):
        return ""
    from researchbench.benchmark.executors.modal.image import modal_credentials_problem, modal_unreachable_problem

    who = "hydra/launcher=modal"
    problem = modal_credentials_problem(who)
    if problem:
        return problem
    import modal

    return modal_unreachable_problem(modal, who)
