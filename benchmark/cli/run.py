"""`researchbench run agent=optuna task=causality` (= `python run_agent_benchmark.py ...`): one agent on one task.

Hydra composes configs/config.yaml with the agent, task, executor and llm groups; the same command
resumes an interrupted run and reprints a finished one. `-m` sweeps (any Hydra launcher: joblib,
submitit, modal) are checked job by job before the first starts, show each run's lines behind its label
(or one line per run: sweep_view=compact) and end with one table of their runs.
Exit codes: 0 the run finished (a budget or the agent ended it), 2 bad input (one line naming the fix),
3 aborted by an outage (one line naming the cause; the same command resumes it; a sweep runs its other
jobs and exits 3 if any was aborted), 130 interrupted. See README.md for the options.
"""

from __future__ import annotations

import os
import sys
from contextlib import nullcontext
from pathlib import Path

from researchbench.benchmark.cli.run_checks import CONFIG_DIR, ENV_DEFAULTS, fail, prevalidate

for _key, _value in ENV_DEFAULTS.items():  # before hydra and litellm are imported
    os.environ.setdefault(_key, _value)

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from hydra.types import RunMode  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from researchbench.benchmark.common.errors import InfrastructureFailure, UserError  # noqa: E402
from researchbench.benchmark.common.inert_text import inert  # noqa: E402
from researchbench.benchmark.launch.sweep import print_job_configs  # noqa: E402
from researchbench.benchmark.launch.sweep_output import job_output, sweep_view  # noqa: E402
from researchbench.benchmark.launch.sweep_table import print_sweep_table, run_dir  # noqa: E402
from researchbench.benchmark.plugins.manager import get_registry  # noqa: E402
from researchbench.benchmark.records.sweep_jobs import record_job_run  # noqa: E402
from researchbench.benchmark.run.config import register_configs  # noqa: E402


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="config")
def hydra_job(cfg: DictConfig) -> None:
    """One job as Hydra calls it (once, or once per job of a sweep, in this process or a launcher's)."""
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode != RunMode.MULTIRUN:
        run(cfg)
        return
    job_dir = Path(hydra_cfg.runtime.output_dir)
    record_job_run(job_dir, run_dir(cfg))  # so the scorer can take the sweep's folder
    with job_output(cfg, job_dir):  # a sweep's job: labelled, and logged
        run(cfg)


def run(cfg: DictConfig) -> None:
    """One job: the engine, with its user errors and outages turned into one line and an exit code."""
    from researchbench.benchmark.run.engine import run_benchmark

    try:
        run_benchmark(cfg, get_registry())
    except UserError as exc:
        fail(str(exc))
    except InfrastructureFailure as exc:
        print(inert(exc.console_line()), file=sys.stderr, flush=True)
        if HydraConfig.get().mode != RunMode.MULTIRUN:  # a sweep goes on; its table says which job aborted
            raise SystemExit(exc.exit_code) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None


def main(argv: list[str]) -> int:
    """Check every job the overrides describe, then hand them to Hydra (which reads sys.argv itself)."""
    register_configs(get_registry())
    invocation = prevalidate(argv)  # every job of a sweep is checked before the first starts
    if invocation.multirun and invocation.args.cfg:
        print_job_configs(invocation)  # Hydra itself refuses -m with --cfg
        return 0
    statuses: list[str] = []
    sys.argv = [sys.argv[0], *argv]  # what @hydra.main parses: the overrides, without a subcommand
    try:
        with sweep_view(invocation.configs) if invocation.multirun and invocation.configs else nullcontext():
            hydra_job()
    finally:
        if invocation.multirun and invocation.configs:
            statuses = print_sweep_table(invocation.configs)
    if "aborted" in statuses:
        return InfrastructureFailure.exit_code
    return 0
