"""`python -m benchmark.cli ...`: the `researchbench` console script without installing it."""

import sys

from benchmark.cli.main import main

sys.exit(main(sys.argv[1:]))
