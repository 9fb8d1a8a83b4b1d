"""Preparing, checking and creating tasks: `python setup.py ...`'s flags, and the helpers behind
`researchbench setup|prepare|check|new` (benchmark/cli/task_commands.py).

setup.py at the root is not a setuptools script (packaging lives in pyproject.toml with hatchling, which
ignores it); it calls `main` here:

    python setup.py --list
    python setup.py --task causality [--task ...] [--force] [--skip-requirements] [--download]
    python setup.py --all | --suite lite
    python setup.py --check causality [...] | --check --all | --check --suite lite  [--reference] [--migrate]
    python setup.py --new my_task [--from tabular] [--dest DIR]
    python setup.py --refresh-lock [--torch VERSION]   (re-resolve requirements/lock.txt, re-record every baseline)
    python setup.py --measure-noise causality [...] | --measure-noise --all  [--seeds 0 1 2] [--draws 300] [--dry-run]

Tasks come from the plugin registry, so tasks that third-party plugins register are set up the same
way. Re-running is a no-op for verified workspaces; a corrupted or stale one is redone. Errors the
user can fix print one line (`error: ...`) and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from researchbench.benchmark.common.errors import UserError


def known_tasks() -> dict[str, Path]:
    """Every registered task by name (ml_tasks/, $RESEARCHBENCH_TASKS_PATH, task plugins), sorted."""
    from researchbench.benchmark.plugins.manager import get_registry

    return dict(sorted(get_registry().tasks.items()))


def _list(tasks: dict[str, Path]) -> None:
    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.workspace import workspace_status

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


def prepare_tasks(names: list[str], tasks: dict[str, Path], force: bool, skip_requirements: bool,
                  downloads: bool = False, every: bool = False) -> None:
    """Install each task's requirements and prepare its workspace; `every` (--all, --suite) skips GPU-scale
    variants on a machine without a GPU."""
    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.workspace import ensure_requirements, prepare

    _require_known(names, tasks)
    specs = [load_task(tasks[name]) for name in dict.fromkeys(names)]  # validate all before doing anything
    if every:  # GPU-scale data is no use on a machine without a GPU: only a task named alone prepares it there
        skipped = [spec for spec in specs if _without_gpu(spec.home)]
        for spec in skipped:
            print(f"{spec.name}: skipped (it needs {spec.resources.gpus} GPU and none is visible here; "
                  f"`python setup.py --task {spec.name}` prepares it anyway)")
        specs = [spec for spec in specs if spec not in skipped]
    for spec in specs:
        if not skip_requirements:
            ensure_requirements(spec)
        prepare(spec, force=force, downloads=downloads)


def _require_known(names: list[str], tasks: dict[str, Path]) -> None:
    from researchbench.benchmark.plugins.builtin import TASKS_PATH_ENV

    unknown = [n for n in names if n not in tasks]
    if unknown:
        known = ", ".join(tasks) or "none"
        raise UserError(f"unknown task '{unknown[0]}'; known tasks: {known} (tasks come from ml_tasks/, the "
                        f"folders in ${TASKS_PATH_ENV}, and task plugins)")


def _migrate(names: list[str], tasks: dict[str, Path]) -> None:
    """Rewrite each task's schema-1 manifest to the current schema; one line per task."""
    from researchbench.benchmark.tasks.schema import SCHEMA_VERSION, migrate_file

    for name in dict.fromkeys(names):
        path = tasks[name] / "task.yaml"
        changes = migrate_file(path)
        print(f"{name}: {path} " + (f"migrated ({'; '.join(changes)})" if changes else
                                    f"needs no migration (not schema 1; this researchbench reads schema {SCHEMA_VERSION})"))


def _without_gpu(task_dir: Path) -> bool:
    """A GPU-scale variant on a machine where no GPU is visible (its checks then use its CPU fallback)."""
    from researchbench.benchmark.authoring.task_check import visible_gpu_ids
    from researchbench.benchmark.tasks.manifest import load_task

    try:
        spec = load_task(task_dir)
    except UserError:
        return False  # the manifest check reports why
    return spec.extends is not None and spec.resources.gpus > 0 and len(visible_gpu_ids()) < spec.resources.gpus


def check_tasks(names: list[str], tasks: dict[str, Path], skip_requirements: bool, reference: bool = False,
           migrate: bool = False) -> int:
    """Run every check on each task (after migrating its manifest, if asked); a table per task; 0 when all pass."""
    from researchbench.benchmark.authoring.task_check import check_task, written_for_schema_1
    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.workspace import ensure_requirements

    _require_known(names, tasks)
    legacy = {name for name in names if written_for_schema_1(tasks[name])}  # the rules' grace outlives --migrate
    if migrate:
        _migrate(names, tasks)
    failed: list[str] = []
    for name in dict.fromkeys(names):
        if not skip_requirements:
            try:
                ensure_requirements(load_task(tasks[name]))
            except UserError:
                pass  # an invalid manifest is reported by the manifest check itself
        fallback = _without_gpu(tasks[name])
        print(f"{name}: checking {tasks[name]}" + (" (no GPU here: its CPU fallback, the same code at its base's "
                                                  "lite scale)" if fallback else ""), flush=True)
        report = check_task(tasks[name], reference=reference, legacy=name in legacy, fallback=fallback)
        print(report.table(), flush=True)
        if not report.ok:
            failed.append(f"{report.task} ({', '.join(report.failed)})")
    if failed:
        print(f"check failed: {'; '.join(failed)}", file=sys.stderr)
        return 1
    print(f"all checks passed ({len(dict.fromkeys(names))} task(s))")
    return 0


def _measure_noise(names: list[str], tasks: dict[str, Path], seeds: list[int] | None, draws: int | None,
                   write: bool) -> None:
    """Measure each task's val/test sizes and the baseline's spread; write them into its task.yaml's noise block."""
    from researchbench.benchmark.authoring.noise_block import block_text, write_block
    from researchbench.benchmark.authoring.noise_measure import measure
    from researchbench.benchmark.tasks.noise import sd_text

    _require_known(names, tasks)
    for name in dict.fromkeys(names):
        result = measure(tasks[name], seeds, draws, log=lambda line: print(f"  {line}", flush=True))
        noise = result.noise
        assert noise.val is not None and noise.test is not None
        print(f"{name}: val {noise.val.size} / test {noise.test.size} {noise.unit}, sd val {sd_text(noise.val.sd)} / "
              f"test {sd_text(noise.test.sd)} ({noise.method()}; {result.seconds:.0f} s)")
        print(block_text(noise), end="", flush=True)
        if write:
            how = write_block(tasks[name] / "task.yaml", noise, name)
            print(f"{name}: {how} the noise block in {tasks[name] / 'task.yaml'}", flush=True)


def new_task(name: str, template: str, dest: str | None) -> None:
    """A task folder from a template, and what to do next."""
    from researchbench.benchmark.authoring.task_template import create_task

    folder = create_task(name, template=template, dest=Path(dest) if dest else None)
    print(f"created {folder} from the '{template}' template; fill in the TODOs, then run "
          f"`python setup.py --check {name}`" + ("" if dest is None else
          f" (with RESEARCHBENCH_TASKS_PATH={folder.parent})"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python setup.py", description="Prepare, check and create researchbench tasks.")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--list", action="store_true", help="list tasks with version, domain and workspace state")
    what.add_argument("--task", action="append", metavar="NAME", help="task to set up (repeatable)")
    what.add_argument("--all", action="store_true", help="set up (or with --check, check) every registered task")
    what.add_argument("--suite", metavar="SUITE", help="set up (or with --check, check) the tasks of a suite "
                                                       "(ml_tasks/suites.yaml), e.g. lite")
    what.add_argument("--new", metavar="NAME", help="create a task folder from a template (ml_tasks/NAME, or --dest)")
    what.add_argument("--refresh-lock", action="store_true", help="re-resolve requirements/lock.txt in a fresh "
                      "virtual environment, re-measure every built-in task's baseline record there, bump the "
                      "versions of the tasks whose scores moved and add CHANGELOG lines (docs/environment.md)")
    parser.add_argument("--check", nargs="*", metavar="NAME", help="check tasks: manifest, prepare, the baseline "
                        "in the sandbox, determinism, trivial predictors vs the floor, no labels in the val phase")
    parser.add_argument("--reference", action="store_true", help="with --check: also run the task's reference "
                        "solution on the hidden test for every baseline seed (it must reach the target)")
    parser.add_argument("--migrate", action="store_true", help="with --check: first rewrite a schema-1 task.yaml "
                        "to the current schema (a minimal edit that keeps comments and order)")
    parser.add_argument("--measure-noise", nargs="*", metavar="NAME", help="measure each task's val/test sizes and "
                        "the baseline's sd (over seeds and half-samples of the units) and write them into the noise "
                        "block of its task.yaml")
    parser.add_argument("--seeds", type=int, nargs="+", help="with --measure-noise: the baseline seeds to run "
                        "(default: the block's last seeds, else the baseline record's)")
    parser.add_argument("--draws", type=int, default=None, help="with --measure-noise: half-samples per phase "
                        "(default: the block's last count, else 300; every possible half when there are fewer)")
    parser.add_argument("--dry-run", action="store_true", help="with --measure-noise: print the block, do not write it")
    parser.add_argument("--from", dest="template", default="tabular", help="template for --new (default: tabular)")
    parser.add_argument("--dest", metavar="DIR", help="with --new: create the task folder inside DIR")
    parser.add_argument("--force", action="store_true", help="redo the workspace even when it verifies")
    parser.add_argument("--skip-requirements", action="store_true", help="do not pip-install task requirements")
    parser.add_argument("--download", action="store_true", help="also fetch the task's optional downloads")
    parser.add_argument("--torch", metavar="VERSION", help="with --refresh-lock: the torch build to pin "
                        "(default: the lock's, a CPU build)")
    args = parser.parse_args(argv)
    try:
        if args.refresh_lock:
            from researchbench.benchmark.authoring.lock_refresh import refresh

            return refresh(torch=args.torch)
        if args.torch:
            raise UserError("--torch goes with --refresh-lock (e.g. `python setup.py --refresh-lock --torch 2.13.0+cpu`)")
        if args.check is not None:
            if args.measure_noise is not None:
                raise UserError("--check and --measure-noise are separate commands; run one, then the other")
            if args.list or args.new or args.task:
                raise UserError("--check takes task names itself (`--check causality`), or --all or --suite")
            if bool(args.check) + bool(args.all) + bool(args.suite) != 1:
                raise UserError("--check needs task names, --all, or --suite <name> (e.g. `--check causality`)")
            tasks = known_tasks()
            names = args.check or (list(tasks) if args.all else suite_names(args.suite))
            return check_tasks(names, tasks, args.skip_requirements, args.reference, args.migrate)
        if args.measure_noise is not None:
            if args.list or args.new or args.task:
                raise UserError("--measure-noise takes task names itself (`--measure-noise causality`), or --all or --suite")
            if bool(args.measure_noise) + bool(args.all) + bool(args.suite) != 1:
                raise UserError("--measure-noise needs task names, --all, or --suite <name>")
            tasks = known_tasks()
            names = args.measure_noise or (list(tasks) if args.all else suite_names(args.suite))
            _measure_noise(names, tasks, args.seeds, args.draws, not args.dry_run)
            return 0
        if args.seeds or args.draws is not None or args.dry_run:
            raise UserError("--seeds, --draws and --dry-run go with --measure-noise")
        if args.migrate:
            raise UserError("--migrate goes with --check (e.g. `python setup.py --check causality --migrate`)")
        if args.new:
            new_task(args.new, args.template, args.dest)
            return 0
        if not (args.list or args.task or args.all or args.suite):
            raise UserError("say what to do: --list, --task NAME, --all, --suite NAME, --check NAME, --new NAME or "
                            "--refresh-lock "
                            "(see `python setup.py --help`)")
        tasks = known_tasks()
        if args.list:
            _list(tasks)
        else:
            names = list(tasks) if args.all else (suite_names(args.suite) if args.suite else args.task)
            prepare_tasks(names, tasks, args.force, args.skip_requirements, args.download, every=not args.task)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


def suite_names(name: str) -> list[str]:
    """The tasks of a suite (ml_tasks/suites.yaml)."""
    from researchbench.benchmark.tasks.suites import suite_tasks

    return suite_tasks(name)
