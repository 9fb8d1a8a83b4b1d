"""Turning bad command lines into one line that names the fix (exit 2), before Hydra prints pages.

The command line is read with Hydra's own parser; each job it describes (one, or every job of a `-m`
sweep) is composed once with Hydra's compose API and checked like a run checks itself at start-up
(benchmark/run/preflight.py); any error is translated here. Only when all succeed does the real
@hydra.main run (which then cannot fail on the same input).
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path
from typing import Any, Callable, NoReturn

from omegaconf import OmegaConf

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.inert_text import inert
from researchbench.benchmark.common.paths import REPO_ROOT
from researchbench.benchmark.launch.sweep import (Invocation, describe, expand, launcher_job_problem, launcher_problem,
                                                  parse, print_job_configs)
from researchbench.benchmark.run.catalog import LIST_COMMAND

CONFIG_DIR = REPO_ROOT / "configs"
GROUPS = ("agent", "task", "executor", "llm")
ENV_DEFAULTS = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HYDRA_FULL_ERROR": "0"}


def fail(message: str) -> NoReturn:
    print(f"error: {inert(message)}", file=sys.stderr)
    raise SystemExit(UserError.exit_code)


def _options(group: str) -> list[str]:
    from hydra.core.config_store import ConfigStore

    try:
        names = set(ConfigStore.instance().list(group))
    except OSError:  # no such group in the store
        names = set()
    names = {n.removesuffix(".yaml") for n in names if n != "base_llm.yaml"}
    names |= {p.stem for p in (CONFIG_DIR / group).glob("*.yaml")}
    return sorted(names)


def _fix_for(exc: Exception, overrides: list[str], compose: Callable) -> str:
    from hydra.errors import ConfigCompositionException, MissingConfigException, OverrideParseException

    text = str(exc).strip()
    if isinstance(exc, MissingConfigException) and exc.missing_cfg_file and "/" in exc.missing_cfg_file:
        group, name = exc.missing_cfg_file.rsplit("/", 1)  # hydra/launcher/<name> too
        return _unknown_option(group, name)
    if isinstance(exc, OverrideParseException):
        return f"cannot parse the override: {text.splitlines()[0]}; write overrides as key=value"
    if isinstance(exc, ConfigCompositionException):
        cause = exc.__cause__ or exc
        key = _override_key(text)
        first = str(cause).strip().splitlines()[0]
        if key and re.search(r"not in (struct|')", first):
            return f"unknown setting '{key}'{_suggest(key, overrides, compose)}; see all settings with --cfg job"
        merging = re.search(r"Error merging override (\S+)", text)
        where = f"bad value in '{merging.group(1)}'" if merging else text.splitlines()[0]
        return f"{where}: {first}; see the expected types with --cfg job"
    return text.splitlines()[0] if text else type(exc).__name__


def _unknown_option(group: str, name: str) -> str:
    """'did you mean' the closest option of the group, else every option, and where to read about them."""
    options = _options(group)
    close = difflib.get_close_matches(name, options, n=1)
    found = f"did you mean '{close[0]}'?" if close else f"available: {', '.join(options)}"
    if group not in GROUPS:
        return f"unknown {group} '{name}'; {found}"
    failed = _failed_plugins() if group != "llm" else []
    if named := [f for f in failed if f.plugin == name]:
        return f"unknown {group} '{name}': {named[0].line()}"
    how = {"agent": "; a third-party agent needs its plugin package installed",
           "task": "; a new task needs ml_tasks/<name>/task.yaml, its folder on $RESEARCHBENCH_TASKS_PATH, "
                   "or a task plugin"}.get(group, "")
    if failed:  # the name may come from a package that broke, not one that is missing
        how = "; plugin packages that failed to load (see the warnings above): " + ", ".join(
            f"{f.plugin} (package {f.package})" for f in failed)
    return f"unknown {group} '{name}'; {found} (descriptions: {LIST_COMMAND} {group}s){how}"


def _failed_plugins() -> list[Any]:
    """Installed plugins whose import failed: the likely reason an agent, task or executor is unknown (a
    package that broke, not one that is missing)."""
    from researchbench.benchmark.plugins.manager import get_registry

    return list(get_registry().failed)


def _override_key(text: str) -> str | None:
    marker = "Could not override '"
    if marker in text:
        return text.split(marker, 1)[1].split("'", 1)[0]
    return None


def _suggest(key: str, overrides: list[str], compose: Callable) -> str:
    """'did you mean ...' from the settings that exist next to the misspelled one."""
    rest = [o for o in overrides if not o.lstrip("+~").startswith(key + "=")]
    try:
        cfg = compose(rest)
    except Exception:
        return ""
    parent, _, leaf = key.rpartition(".")
    node = OmegaConf.select(cfg, parent) if parent else cfg
    if node is None or not OmegaConf.is_dict(node):
        return ""
    keys = [str(k) for k in node.keys()]
    close = difflib.get_close_matches(leaf, keys, n=1)
    where = f"{parent}." if parent else ""
    return f" (did you mean '{where}{close[0]}'?)" if close else f" (known: {', '.join(keys)})"


def prevalidate(argv: list[str]) -> Invocation:
    """Compose every job the command line describes (one, or each job of a `-m` sweep) the way Hydra
    will and run the start-up checks on it; exit 2 with one line on the first problem, before any
    job starts."""
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.run.catalog import brief_help, list_command
    from researchbench.benchmark.run.preflight import preflight

    if argv[:1] == ["list"]:
        list_command(argv[1:], get_registry(), fail)
        raise SystemExit(0)
    invocation = parse(argv, fail)
    if invocation.args.help:
        print(brief_help(get_registry()))
        raise SystemExit(0)
    if invocation.passthrough:
        return invocation
    overrides = list(invocation.args.overrides)
    stray = [a for a in overrides if "=" not in a and not a.startswith("~")]
    if stray:
        fail(f"'{stray[0]}' is not an override; write key=value (e.g. agent=greedy task=causality)")
    compose = _composer(invocation.args)
    if invocation.multirun:
        try:
            invocation.jobs = expand(overrides)
        except Exception as exc:
            fail(_fix_for(exc, overrides, compose))
        problem = launcher_problem(overrides) if invocation.args.cfg is None else ""
        if problem:
            fail(problem)
    else:
        invocation.jobs = [overrides]
    registry, verified = get_registry(), set[str]()  # tasks whose workspace one job of a sweep has verified
    try:
        for number, job in enumerate(invocation.jobs):
            where = f"job {number} of the sweep ({describe(job)}): " if invocation.multirun else ""
            try:
                cfg = compose(job)
            except Exception as exc:  # every composition error becomes one line
                fail(where + _fix_for(exc, job, compose))
            if invocation.args.cfg is None:  # printing a config needs no credentials or data
                try:
                    preflight(cfg, registry, verified)
                except UserError as exc:
                    fail(where + str(exc))
                problem = launcher_job_problem(overrides, cfg) if invocation.multirun else ""
                if problem:
                    fail(where + problem)
            invocation.configs.append(cfg)
    finally:
        from hydra.core.global_hydra import GlobalHydra

        GlobalHydra.instance().clear()
    if invocation.args.cfg == "job" and not invocation.args.package:  # ours: types, the budget resolved
        _show_job_configs(invocation, registry)
    return invocation


def _show_job_configs(invocation: Invocation, registry: Any) -> NoReturn:
    """`--cfg job`: benchmark/run/config_view.py's view of the run (each job's, for a sweep), then exit;
    `--cfg hydra|all` and `--package` stay Hydra's."""
    from researchbench.benchmark.run.config_view import job_config_text

    try:
        if invocation.multirun:
            print_job_configs(invocation)
        else:
            print(job_config_text(invocation.configs[0], registry))
    except UserError as exc:  # the task's manifest does not load
        fail(str(exc))
    raise SystemExit(0)


def _composer(args: Any) -> Callable[[list[str]], Any]:
    """Hydra's compose API set up as this command line sets up @hydra.main (--config-path,
    --config-name, --config-dir)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    config_dir = CONFIG_DIR
    if args.config_path:
        config_dir = (CONFIG_DIR.parent / args.config_path).resolve()
    name = args.config_name or "config"
    extra = [f"hydra.searchpath=[file://{Path(args.config_dir).resolve()}]"] if args.config_dir else []

    def compose(items: list[str]) -> Any:
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
            return hydra_compose(config_name=name, overrides=[*extra, *items])

    return compose
