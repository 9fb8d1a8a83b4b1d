"""`researchbench view [RESULTS]` (= `python run_agent_benchmark.py view ...`): the live viewer over runs.

The viewer is its own package, `researchbench.benchmark.viewer` (its server in the `view` extra), imported only here and only
when asked for, so every other command works in an install without it.
"""

from __future__ import annotations

import sys

NOT_INSTALLED = ("the viewer is not installed in this version of researchbench (no benchmark.viewer package); "
                 "each run's report.html is its offline view")


def main(argv: list[str]) -> int:
    """Hand the arguments to `researchbench.benchmark.viewer.main`; without the viewer, one line and exit 2."""
    try:
        from researchbench.benchmark.viewer import main as viewer_main
    except ModuleNotFoundError as exc:
        if exc.name in ("researchbench.benchmark.viewer", "benchmark"):
            print(f"error: {NOT_INSTALLED}", file=sys.stderr)
        else:  # the viewer is here but a package it needs is not
            print(f"error: the viewer needs the Python package '{exc.name}', which is not installed; install "
                  f"the view extra: pip install -c requirements/lock.txt -e '.[view]'", file=sys.stderr)
        return 2
    return int(viewer_main(argv) or 0)
