"""`researchbench COMMAND ...`: the console script (pyproject.toml's [project.scripts]) and its one dispatch.

Each command's module is imported only when that command runs, so `--version`, `--help` and `list` never
load Hydra's run machinery, the engine or the scorer. `run_script` is run_agent_benchmark.py's door: its
overrides run, and `list`, `view` and `--version` answer as here.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable
from dataclasses import dataclass

from researchbench.benchmark.common.inert_text import inert
from researchbench.benchmark.common.version import DISTRIBUTION, package_version

PROG = "researchbench"


@dataclass(frozen=True)
class Command:
    summary: str  # the one line `researchbench --help` shows
    handler: Callable[[list[str], str], int]  # (the command's arguments, its prog) -> exit code


def _run(argv: list[str], prog: str) -> int:
    if "--version" in argv:  # Hydra's own --version would print Hydra's
        return _version()
    from researchbench.benchmark.cli.run import main

    return main(argv)


def _list(argv: list[str], prog: str) -> int:
    from researchbench.benchmark.cli.run_checks import fail
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.run.catalog import list_command

    if argv[:1] in (["-h"], ["--help"]):
        print(f"usage: {prog} [agents|tasks|llms|executors ...]\n\nEvery agent, task, LLM preset and executor "
              "(or only the kinds named), each with a one-line description and its source; tasks with their "
              "`prepared` state.")
        return 0
    list_command(argv, get_registry(), fail)
    return 0


def _prepare(argv: list[str], prog: str) -> int:
    from researchbench.benchmark.cli.task_commands import prepare

    return prepare(argv, prog)


def _check(argv: list[str], prog: str) -> int:
    from researchbench.benchmark.cli.task_commands import check

    return check(argv, prog)


def _new(argv: list[str], prog: str) -> int:
    from researchbench.benchmark.cli.task_commands import new

    return new(argv, prog)


def _score(argv: list[str], prog: str) -> int:
    from researchbench.benchmark.cli.score import main

    return main(argv, prog=prog)


def _view(argv: list[str], prog: str) -> int:
    from researchbench.benchmark.cli.view import main

    return main(argv)


COMMANDS: dict[str, Command] = {
    "run": Command("run one agent on one task, or a sweep with -m: Hydra overrides (agent=optuna task=causality ...)",
                   _run),
    "list": Command("every agent, task, LLM preset and executor, with a description (tasks: prepared or not)", _list),
    "setup": Command("install tasks' requirements and prepare their workspaces: TASK ... | --all | --suite S", _prepare),
    "prepare": Command("the same as setup", _prepare),
    "check": Command("check tasks: manifest, baseline in the sandbox, determinism, floors, no labels in val", _check),
    "new": Command("create a task folder from a template (NAME [--from TEMPLATE] [--dest DIR])", _new),
    "score": Command("score finished runs: headline tables, CSV/markdown, plots, an HTML report (RESULTS ...)",
                     _score),
    "view": Command("watch and compare runs in a local web page ([RESULTS])", _view),
}
SCRIPT_COMMANDS = ("list", "view")  # what `python run_agent_benchmark.py` answers besides a run's overrides


def help_text() -> str:
    """What `researchbench --help` prints: every command in one line."""
    width = max(map(len, COMMANDS))
    lines = [f"usage: {PROG} COMMAND [ARGS ...]    ({PROG} COMMAND --help: that command's options)", "",
             "Benchmark autonomous ML-research agents. Commands:"]
    lines += [f"  {name:<{width}}  {command.summary}" for name, command in COMMANDS.items()]
    lines += ["", f"  --version  print {PROG}'s version", "",
              "The root scripts stay equivalent: python run_agent_benchmark.py (run, list, view),",
              "python setup.py (setup, check, new), python compute_agent_metrics.py (score)."]
    return "\n".join(lines)


def _version() -> int:
    print(f"{DISTRIBUTION} {package_version()}")
    return 0


def _unknown(name: str) -> int:
    """One line: what was typed, the closest command, every choice."""
    close = difflib.get_close_matches(name, COMMANDS, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    if "=" in name or name in ("-m", "--multirun", "--cfg", "-c"):
        hint = f"overrides go after `run` (`{PROG} run {name} ...`); "
    print(f"error: unknown command '{inert(name)}'; {hint}choose one of {', '.join(COMMANDS)} "
          f"(see `{PROG} --help`)", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """The `researchbench` console script: dispatch to one command; bad input is one line and exit 2."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(help_text(), file=sys.stdout if argv else sys.stderr)  # no command at all is bad input
        return 0 if argv else 2
    if argv[0] == "--version":
        return _version()
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        return _unknown(name)
    return COMMANDS[name].handler(rest, f"{PROG} {name}")


def run_script(argv: list[str]) -> int:
    """run_agent_benchmark.py: its overrides are `researchbench run`'s; `list`, `view` and `--version` the same."""
    if argv[:1] and argv[0] in SCRIPT_COMMANDS:
        return main(argv)
    return main(["run", *argv])

