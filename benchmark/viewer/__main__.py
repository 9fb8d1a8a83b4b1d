"""`python -m researchbench.benchmark.viewer [RESULTS] [--port N] [--host H] [--no-browser]`."""

import sys

from researchbench.benchmark.viewer.cli import main

sys.exit(main(sys.argv[1:]))
