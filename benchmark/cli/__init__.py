"""The command line, one front door: `researchbench COMMAND` (`main`: run, list, setup/prepare, check, new, score,
view, --version), each command in its own module (`run`, `task_commands` over `tasks`, `score`, `view`);
`run_checks` turns a bad run command line into one line before Hydra runs. The root scripts
run_agent_benchmark.py, setup.py and compute_agent_metrics.py are shims over these modules.

May import: every `benchmark` layer (rank 7, the top, in docs/architecture.md); nothing in the harness imports it.
"""
from researchbench.benchmark.cli.run_checks import CONFIG_DIR, ENV_DEFAULTS, GROUPS, fail, prevalidate

__all__ = ["CONFIG_DIR", "ENV_DEFAULTS", "GROUPS", "fail", "prevalidate"]  # `from benchmark.cli import ...` as before
