"""Run one agent on one task: `python run_agent_benchmark.py agent=optuna task=causality` (= `researchbench run ...`).

Also `python run_agent_benchmark.py list [KIND]`, `... view [RESULTS]` and `... --version`, as `researchbench`
answers them. The command lives in benchmark/cli/ (run.py; exit codes and options there and in README.md).
"""

import sys

from researchbench.benchmark.cli.main import run_script

if __name__ == "__main__":
    sys.exit(run_script(sys.argv[1:]))
