"""`python -m benchmark.viewer [RESULTS] [--port N] [--host H] [--no-browser]`."""

import sys

from benchmark.viewer.cli import main

sys.exit(main(sys.argv[1:]))
