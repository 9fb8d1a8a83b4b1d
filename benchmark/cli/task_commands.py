"""`researchbench setup|prepare`, `researchbench check` and `researchbench new`: setup.py's jobs with task names
as arguments (benchmark/cli/tasks.py does the work; `python setup.py --task/--check/--new` stays the same)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.inert_text import inert


def _which(parser: argparse.ArgumentParser) -> None:
    """TASK ... | --all | --suite S: the tasks a command acts on."""
    parser.add_argument("names", nargs="*", metavar="TASK", help="task names (see `researchbench list tasks`)")
    parser.add_argument("--all", action="store_true", help="every registered task")
    parser.add_argument("--suite", metavar="SUITE", help="the tasks of a suite (ml_tasks/suites.yaml), e.g. lite")


def _names(args: argparse.Namespace, command: str) -> tuple[list[str], dict]:
    from researchbench.benchmark.cli.tasks import known_tasks, suite_names

    if bool(args.names) + bool(args.all) + bool(args.suite) != 1:
        raise UserError(f"`researchbench {command}` needs task names, --all, or --suite NAME "
                        f"(e.g. `researchbench {command} causality`)")
    tasks = known_tasks()
    return args.names or (list(tasks) if args.all else suite_names(args.suite)), tasks


def prepare(argv: list[str], prog: str) -> int:
    """Install the tasks' requirements and prepare their workspaces (`python setup.py --task/--all/--suite`)."""
    from researchbench.benchmark.cli.tasks import prepare_tasks

    parser = argparse.ArgumentParser(prog=prog, description=prepare.__doc__)
    _which(parser)
    parser.add_argument("--force", action="store_true", help="redo the workspace even when it verifies")
    parser.add_argument("--skip-requirements", action="store_true", help="do not pip-install task requirements")
    parser.add_argument("--download", action="store_true", help="also fetch the task's optional downloads")
    args = parser.parse_args(argv)

    def act() -> int:
        names, tasks = _names(args, prog.split()[-1])
        prepare_tasks(names, tasks, args.force, args.skip_requirements, args.download, every=not args.names)
        return 0

    return _one_line_errors(act)


def check(argv: list[str], prog: str) -> int:
    """Check tasks: manifest, prepare, the baseline in the sandbox, determinism, trivial predictors vs the floor,
    no labels in the val phase (`python setup.py --check`); exit 1 when a check fails."""
    from researchbench.benchmark.cli.tasks import check_tasks

    parser = argparse.ArgumentParser(prog=prog, description=check.__doc__)
    _which(parser)
    parser.add_argument("--reference", action="store_true", help="also run the task's reference solution on the "
                        "hidden test for every baseline seed (it must reach the target)")
    parser.add_argument("--migrate", action="store_true", help="first rewrite a schema-1 task.yaml to the current "
                        "schema (a minimal edit that keeps comments and order)")
    parser.add_argument("--skip-requirements", action="store_true", help="do not pip-install task requirements")
    args = parser.parse_args(argv)

    def act() -> int:
        names, tasks = _names(args, "check")
        return check_tasks(names, tasks, args.skip_requirements, args.reference, args.migrate)

    return _one_line_errors(act)


def new(argv: list[str], prog: str) -> int:
    """Create a task folder from a template: ml_tasks/NAME, or DIR/NAME (`python setup.py --new`)."""
    from researchbench.benchmark.cli.tasks import new_task

    parser = argparse.ArgumentParser(prog=prog, description=new.__doc__)
    parser.add_argument("name", metavar="NAME", help="the new task's name")
    parser.add_argument("--from", dest="template", default="tabular", help="the template (default: tabular)")
    parser.add_argument("--dest", metavar="DIR", help="create the task folder inside DIR")
    args = parser.parse_args(argv)

    def act() -> int:
        new_task(args.name, args.template, args.dest)
        return 0

    return _one_line_errors(act)


def _one_line_errors(act: Callable[[], int]) -> int:
    """A UserError is one line and its exit code (2), as `python setup.py` answers it."""
    try:
        return act()
    except UserError as exc:
        print(f"error: {inert(str(exc))}", file=sys.stderr)
        return exc.exit_code
