"""What a run can be made of: the agents, tasks, LLM presets and executors that
`python run_agent_benchmark.py list` shows, each with a one-line description and who provides it.

Each description has one home: an agent's `AgentSpec.description`, an executor's
`ExecutorSpec.description`, a task's description file (its title) and manifest (area, metric,
direction) with `ml_tasks/suites.yaml` for its suites, and an LLM preset's first comment line.
Listing reads manifests and YAML only (and, for the tasks' `prepared` column, each workspace's checksum
file, never its data): it imports no agent dependency (litellm, torch, optuna) and prepares nothing.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NoReturn

import yaml

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.inert_text import inert
from researchbench.benchmark.common.paths import REPO_ROOT
from researchbench.benchmark.plugins.builtin import TASKS_PATH_ENV
from researchbench.benchmark.plugins.manager import BUILTIN, Registry

KINDS = ("agents", "tasks", "llms", "executors")
GROUP_OF = {"agents": "agent", "tasks": "task", "llms": "llm", "executors": "executor"}
LIST_COMMAND = "python run_agent_benchmark.py list"
LLM_PRESETS = REPO_ROOT / "configs" / "llm"
STATE_HEADING = "prepared"  # the tasks' workspace column: yes, no, stale or corrupted
SHOWN_STATE = {"prepared": "yes", "not prepared": "no"}
PREPARE_HINT = "to prepare a task (no, stale or corrupted): python setup.py --task NAME"


@dataclass(frozen=True)
class Entry:
    name: str
    description: str
    source: str  # BUILTIN, "package <distribution>", or where a task folder came from
    details: str = ""  # a second line: a task's area, metric and suites
    state: str = ""  # whether a task's workspace is prepared: yes, no, stale or corrupted (a column)


def agent_entries(registry: Registry) -> list[Entry]:
    return [Entry(name, spec.description or "(no description)", registry.sources.get(("agent", name), BUILTIN))
            for name, spec in sorted(registry.agents.items())]


def executor_entries(registry: Registry) -> list[Entry]:
    return [Entry(name, spec.description or "(no description)", registry.sources.get(("executor", name), BUILTIN))
            for name, spec in sorted(registry.executors.items())]


def task_entries(registry: Registry) -> list[Entry]:
    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.suites import load_suites
    from researchbench.benchmark.tasks.workspace import prepared_state

    try:
        suites = load_suites()
    except UserError:  # a broken suites file must not hide the tasks; `--suite` reports it
        suites = {}
    entries = []
    for name, folder in sorted(registry.tasks.items()):
        source = registry.sources.get(("task", name), BUILTIN)
        if source == BUILTIN and not folder.is_relative_to(REPO_ROOT / "ml_tasks"):
            source = f"${TASKS_PATH_ENV} ({folder})"
        try:
            task = load_task(folder)
        except UserError as exc:
            entries.append(Entry(name, f"(manifest does not load: {exc})", source))
            continue
        member_of = [suite for suite, names in sorted(suites.items()) if name in names]
        details = (f"area {task.domain}; metric {task.metric.name}, {task.metric.direction} is better; "
                   f"suites: {', '.join(member_of) or 'none'}")
        entries.append(Entry(name, _title(task.task_dir / task.description) or "(no description)", source, details,
                             SHOWN_STATE.get(state := prepared_state(task), state)))
    return entries


def _title(markdown: Path) -> str:
    """A task's description in one line: its file's first heading, else its first sentence."""
    try:
        lines = [line.strip() for line in markdown.read_text().splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError):
        return ""
    if not lines:
        return ""
    if lines[0].startswith("#"):
        return lines[0].lstrip("#").strip()
    return lines[0].split(". ", 1)[0].rstrip(".") + "."


def llm_presets(folder: Path = LLM_PRESETS) -> dict[str, Path]:
    """Selectable presets (`llm=<name>`): every YAML file that is not only a defaults base of others."""
    files = {path.stem: path for path in sorted(folder.glob("*.yaml"))}
    bases = set()
    for path in files.values():
        raw = _yaml(path)
        for item in raw.get("defaults", []) if isinstance(raw.get("defaults"), list) else []:
            if isinstance(item, str) and item != "_self_":
                bases.add(item)
    return {name: path for name, path in files.items() if name not in bases}


def _yaml(path: Path) -> dict:
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return {}
    return raw if isinstance(raw, dict) else {}


def llm_entries(folder: Path = LLM_PRESETS) -> list[Entry]:
    entries = []
    for name, path in llm_presets(folder).items():
        comments = [line.lstrip("#").strip() for line in path.read_text().splitlines() if line.startswith("#")]
        model = _yaml(path).get("model")
        entries.append(Entry(name, comments[0] if comments else f"model {model}", BUILTIN))
    return entries


def entries(kind: str, registry: Registry) -> list[Entry]:
    if kind == "llms":
        return llm_entries()
    return {"agents": agent_entries, "tasks": task_entries, "executors": executor_entries}[kind](registry)


def render(kind: str, items: list[Entry]) -> str:
    width = max((len(e.name) for e in items), default=0) + 2
    lines = [f"{kind} ({GROUP_OF[kind]}=NAME):"]
    states = [e.state for e in items if e.state]
    column = max((len(s) for s in [*states, STATE_HEADING]), default=0) + 2 if states else 0
    if column:  # tasks: a heading names the column
        lines.append(f"  {'':<{width}}{STATE_HEADING}")
    for e in items:
        shown = inert(f"{e.description} [{e.source}]", multiline=False)  # plugin and manifest text
        lines.append(f"  {inert(e.name, multiline=False):<{width}}{e.state:<{column}}{shown}".rstrip())
        if e.details:
            lines.append(f"  {'':<{width + column}}{inert(e.details, multiline=False)}")
    if not items:
        lines.append("  (none)")
    elif column and any(state != "yes" for state in states):
        lines.append(f"  ({PREPARE_HINT})")
    return "\n".join(lines)


def parse_kinds(args: list[str], fail: Callable[[str], NoReturn]) -> list[str]:
    """`list` arguments -> the kinds to show (none: all four); singular names are accepted."""
    kinds = []
    for arg in args:
        kind = arg if arg in KINDS else f"{arg}s"
        if kind not in KINDS:
            close = difflib.get_close_matches(arg, KINDS, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            fail(f"cannot list '{arg}': {hint}choose among {', '.join(KINDS)} (or none for all)")
        kinds.append(kind)
    return list(dict.fromkeys(kinds)) or list(KINDS)


def list_command(args: list[str], registry: Registry, fail: Callable[[str], NoReturn]) -> None:
    print("\n\n".join(render(kind, entries(kind, registry)) for kind in parse_kinds(args, fail)))


def brief_help(registry: Registry) -> str:
    """What `--help` shows: how to call the command, and every option by name (descriptions: `list`)."""
    names = {kind: [e.name for e in entries(kind, registry)] for kind in ("agents", "llms", "executors")}
    names["tasks"] = sorted(registry.tasks)  # names only: --help reads no manifest
    groups = "\n".join(f"  {GROUP_OF[kind] + '=':<10}{', '.join(names[kind])}" for kind in KINDS)
    return f"""usage: python run_agent_benchmark.py agent=NAME task=NAME [llm=NAME] [executor=NAME] [key=value ...]
       python run_agent_benchmark.py -m agent=A,B task=T seed=0,1,2   (a sweep)
       {LIST_COMMAND} [agents|tasks|llms|executors]   (each with a description and its source)

Runs one agent on one task; the same command resumes an interrupted run. Options:
{groups}

Offline LLMs: llm=scripted answers from a script of replies that really edit the code (default
examples/scripts/<task>.yaml, one per lite task; llm.script=PATH for your own) and ends the search when the
script runs out; llm=mock answers every call with one reply that NEVER edits, so an LLM agent runs end to
end but records no-op steps only.

Every setting with its type and the run's resolved budget: python run_agent_benchmark.py --cfg job
Hydra's own flags: --hydra-help. Guide: README.md and docs/."""
