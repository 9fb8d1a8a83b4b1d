"""Score runs: `python compute_agent_metrics.py results/` (= `researchbench score results/`).

The scorer lives in benchmark/cli/score.py (its options: `--help`; every number: docs/metrics.md).
"""

import sys

from researchbench.benchmark.cli.score import main

if __name__ == "__main__":
    sys.exit(main())
