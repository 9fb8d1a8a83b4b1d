"""Task bootstrap CLI: install a task's requirements and prepare workspace/<task>/.

Not a setuptools script (packaging lives in pyproject.toml with hatchling, which ignores this file).

    python setup.py --list
    python setup.py --task causality [--task ...] [--force] [--skip-requirements]
    python setup.py --all

Tasks come from the plugin registry, so tasks that third-party plugins register are set up the same
way. Re-running is a no-op for verified workspaces; a corrupted or stale one is redone. Errors the
user can fix print one line (`error: ...`) and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmark.errors import UserError


def _known_tasks() -> dict[str, Path]:
    from benchmark.plugins import get_registry

    return dict(sorted(get_registry().tasks.items()))


def _list(tasks: dict[str, Path]) -> None:
    from benchmark.task import load_task
    from benchmark.workspace import workspace_status

    if not tasks:
        print("no tasks registered")
        return
    width = max(len(name) for name in tasks)
    for name, task_dir in tasks.items():
        try:
            spec = load_task(task_dir)
        except UserError as exc:
            print(f"{name:<{width}}  invalid manifest: {exc}")
            continue
        print(f"{name:<{width}}  version {spec.version:<8} {spec.domain:<20} {workspace_status(spec)}")


def _setup(names: list[str], tasks: dict[str, Path], force: bool, skip_requirements: bool) -> None:
    from benchmark.task import load_task
    from benchmark.workspace import ensure_requirements, prepare

    unknown = [n for n in names if n not in tasks]
    if unknown:
        known = ", ".join(tasks) or "none"
        raise UserError(f"unknown task '{unknown[0]}'; known tasks: {known}")
    specs = [load_task(tasks[name]) for name in dict.fromkeys(names)]  # validate all before doing anything
    for spec in specs:
        if not skip_requirements:
            ensure_requirements(spec)
        prepare(spec, force=force)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python setup.py", description="Prepare researchbench task workspaces.")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--list", action="store_true", help="list tasks with version, domain and workspace state")
    what.add_argument("--task", action="append", metavar="NAME", help="task to set up (repeatable)")
    what.add_argument("--all", action="store_true", help="set up every registered task")
    parser.add_argument("--force", action="store_true", help="redo the workspace even when it verifies")
    parser.add_argument("--skip-requirements", action="store_true", help="do not pip-install task requirements")
    args = parser.parse_args(argv)
    try:
        tasks = _known_tasks()
        if args.list:
            _list(tasks)
        else:
            _setup(list(tasks) if args.all else args.task, tasks, args.force, args.skip_requirements)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
