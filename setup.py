"""Task bootstrap CLI, not a setuptools script (packaging is pyproject.toml's, with hatchling, which ignores this
file): `python setup.py --all | --task NAME | --check NAME | --new NAME | --list | --refresh-lock | --measure-noise`
(`researchbench setup|check|new` do the same). The command lives in benchmark/cli/tasks.py (`--help`).
"""

import sys

from researchbench.benchmark.cli.tasks import main
from researchbench.benchmark.cli.tasks import prepare_tasks as _setup  # noqa: F401  # this file's old name, for code that loads it

if __name__ == "__main__":
    sys.exit(main())
