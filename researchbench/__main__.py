"""`python -m researchbench ...`: the `researchbench` console script without installing it."""

import sys

from researchbench.benchmark.cli.main import main

sys.exit(main(sys.argv[1:]))
