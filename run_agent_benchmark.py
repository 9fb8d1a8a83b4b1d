"""Run one agent on one task: `python run_agent_benchmark.py agent=optuna task=causality`.

Hydra composes configs/config.yaml with the agent, task, executor and llm groups; the same command
resumes an interrupted run and reprints a finished one. `-m` sweeps (any Hydra launcher: joblib,
submitit, modal) are checked job by job before the first starts and end with one table of their runs.
See README.md for the options.
"""

from __future__ import annotations

import os
import sys

from benchmark.cli import ENV_DEFAULTS, fail, prevalidate

for _key, _value in ENV_DEFAULTS.items():
    os.environ.setdefault(_key, _value)

import hydra  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from benchmark.config import register_configs  # noqa: E402
from benchmark.errors import UserError  # noqa: E402
from benchmark.plugins import get_registry  # noqa: E402
from benchmark.sweep import print_job_configs  # noqa: E402
from benchmark.sweep_table import print_sweep_table  # noqa: E402


@hydra.main(version_base="1.3", config_path="configs", config_name="config")
def main(cfg: DictConfig) -> None:
    from benchmark.engine import run_benchmark

    try:
        run_benchmark(cfg, get_registry())
    except UserError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        raise SystemExit(130) from None


if __name__ == "__main__":
    register_configs(get_registry())
    invocation = prevalidate(sys.argv[1:])  # every job of a sweep is checked before the first starts
    if invocation.multirun and invocation.args.cfg:
        print_job_configs(invocation)  # Hydra itself refuses -m with --cfg
        raise SystemExit(0)
    try:
        main()
    finally:
        if invocation.multirun and invocation.configs:
            print_sweep_table(invocation.configs)
