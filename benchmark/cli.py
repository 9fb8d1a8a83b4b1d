"""Turning bad command lines into one line that names the fix (exit 2), before Hydra prints pages.

The overrides are composed once with Hydra's compose API; any composition error is translated here.
Only when that succeeds does the real @hydra.main run (which then cannot fail on the same input).
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path
from typing import Callable, NoReturn

from omegaconf import OmegaConf

from benchmark.errors import UserError

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
GROUPS = ("agent", "task", "executor", "llm")
ENV_DEFAULTS = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HYDRA_FULL_ERROR": "0"}


def fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(UserError.exit_code)


def _options(group: str) -> list[str]:
    from hydra.core.config_store import ConfigStore

    names = set(ConfigStore.instance().list(group)) if group in ConfigStore.instance().repo else set()
    names = {n.removesuffix(".yaml") for n in names if n != "base_llm.yaml"}
    names |= {p.stem for p in (CONFIG_DIR / group).glob("*.yaml")}
    return sorted(names)


def _fix_for(exc: Exception, overrides: list[str], compose: Callable) -> str:
    from hydra.errors import ConfigCompositionException, MissingConfigException, OverrideParseException

    text = str(exc).strip()
    if isinstance(exc, MissingConfigException) and exc.missing_cfg_file and "/" in exc.missing_cfg_file:
        group, name = exc.missing_cfg_file.split("/", 1)
        choices = ", ".join(_options(group))
        hint = {"agent": "install the agent's plugin package or pick one of these",
                "task": "add ml_tasks/<name>/task.yaml, put its folder on $RESEARCHBENCH_TASKS_PATH, "
                        "install a task plugin, or pick one of these"}.get(
            group, "pick one of these")
        return f"unknown {group} '{name}' (available: {choices}); {hint}"
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


def prevalidate(argv: list[str]) -> None:
    """Compose the config the way Hydra will; exit 2 with one line on any problem."""
    if any(a in ("-m", "--multirun", "-h", "--help", "--hydra-help", "--info") or a.startswith("--info")
           for a in argv):
        return  # sweeps are validated per job by Hydra itself
    overrides = [a for a in argv if not a.startswith("-") and "=" in a]
    stray = [a for a in argv if not a.startswith("-") and "=" not in a and a not in ("job", "hydra", "all")]
    if stray:
        fail(f"'{stray[0]}' is not an override; write key=value (e.g. agent=greedy task=causality)")
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    def compose(items: list[str]):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            return hydra_compose(config_name="config", overrides=items)

    try:
        compose(overrides)
    except Exception as exc:  # every composition error becomes one line
        fail(_fix_for(exc, overrides, compose))
    finally:
        GlobalHydra.instance().clear()
