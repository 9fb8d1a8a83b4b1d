"""A value outside its setting's declared domain (benchmark/common/domains.py) is the user's error: one line
naming the key, exit 2, before anything is prepared or run. The cases are derived from the declarations, so a
new field with a domain is covered as soon as it is declared, and a numeric field without one fails here."""

from __future__ import annotations

import copy
import dataclasses
import functools
import typing
from pathlib import Path
from typing import Any, Iterator

import pytest
from omegaconf import OmegaConf, open_dict

from researchbench.benchmark.cli import fail, prevalidate
from researchbench.benchmark.common.domains import Domain, domain_of, out_of_range
from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.plugins.manager import BUILTIN, get_registry
from researchbench.benchmark.run.config import RunConfig, register_configs
from researchbench.benchmark.run.preflight import preflight
from conftest import compose, run_cli
from researchbench import AgentSpec, domain


@dataclasses.dataclass(frozen=True)
class Setting:
    """One declared setting: the overrides that select its config, its key, its config class, the field and
    its domain."""

    selection: tuple[str, ...]
    key: str
    owner: type
    field: dataclasses.Field
    domain: Domain
    in_dict: bool = False  # an entry of a dict of configs (llm.operators.<name>.*): set as an object

    def refused_values(self) -> list[Any]:
        """One value past each side of the domain (a wrong length too, for a fixed-length list)."""
        d, real = self.domain, "float" in str(self.field.type)
        if d.one_of:
            bad: list[Any] = [f"not-{d.one_of[0]}"]
        else:
            sides = [(d.ge, -1), (d.gt, 0), (d.le, 1), (d.lt, 0)]
            bad = [bound + step if real else int(bound + step) for bound, step in sides if bound is not None]
        if "list" not in str(self.field.type):
            return bad
        lists = [[value] for value in bad]
        if d.length is not None:
            lists.append(self.field.default_factory()[:d.length - 1])
        return lists


def _config_type(hint: Any) -> tuple[type | None, bool]:
    """(the config dataclass a field holds, whether as the values of a dict), or (None, False)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is dict and dataclasses.is_dataclass(args[-1]):
        return args[-1], True
    inner = args[0] if typing.get_origin(hint) is typing.Union and len(args) == 1 else hint
    return (inner, False) if dataclasses.is_dataclass(inner) else (None, False)


def declared(cls: type, selection: tuple[str, ...], prefix: str = "", in_dict: bool = False) -> Iterator[Setting]:
    """Every setting of `cls` with a declared domain, nested config dataclasses included."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        allowed = domain_of(field)
        if allowed is not None:
            yield Setting(selection, prefix + field.name, cls, field, allowed, in_dict)
        nested, is_dict = _config_type(hints[field.name])
        if nested is not None:
            inner = f"{prefix}{field.name}.analyze." if is_dict else f"{prefix}{field.name}."
            yield from declared(nested, selection, inner, in_dict or is_dict)


def builtin_roots() -> list[tuple[tuple[str, ...], str, type]]:
    """(selecting overrides, key prefix, config class) of the run itself and every built-in agent and executor."""
    registry = get_registry()
    roots = [((), "", RunConfig)]
    roots += [((f"agent={name}",), "agent.", spec.config_class) for name, spec in sorted(registry.agents.items())
              if registry.sources["agent", name] == BUILTIN]
    roots += [((f"executor={name}",), "executor.", spec.config_class)
              for name, spec in sorted(registry.executors.items()) if registry.sources["executor", name] == BUILTIN]
    return roots


SETTINGS = [s for selection, prefix, cls in builtin_roots() for s in declared(cls, selection, prefix)]
CASES = [pytest.param(s, value, id=f"{' '.join(s.selection)} {s.key}={value}".strip())
         for s in SETTINGS for value in s.refused_values()]


@pytest.fixture(scope="module", autouse=True)
def _configs() -> None:
    register_configs(get_registry())


@functools.lru_cache(maxsize=None)
def _composed(selection: tuple[str, ...]) -> Any:
    return compose(*selection, "task=toy")


def _refusal(capsys: pytest.CaptureFixture, check: Any) -> str:
    """The one stderr line and exit 2 that `check` ends with, as the CLI turns a UserError into them."""
    with pytest.raises(SystemExit) as exit_:
        try:
            check()
        except UserError as exc:
            fail(str(exc))
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_every_declared_setting_is_walked() -> None:
    keys = {s.key for s in SETTINGS}
    assert {"seed", "parallel", "budget.steps", "llm.temperature", "llm.operators.analyze.max_tokens",
            "agent.debug_prob", "executor.max_parallel", "executor.gpus", "llm.cache"} <= keys
    assert {s.selection for s in SETTINGS} >= {("agent=optuna",), ("agent=react",), ("executor=modal",)}


@pytest.mark.parametrize("setting, value", CASES)
def test_a_value_outside_its_domain_is_one_line_naming_the_key(setting: Setting, value: Any, capsys) -> None:
    cfg = copy.deepcopy(_composed(setting.selection))
    if setting.in_dict:  # e.g. llm.operators.analyze.temperature: the entry is one config object
        where, _, name = setting.key.rpartition(".")[0].rpartition(".")
        with open_dict(cfg):
            OmegaConf.select(cfg, where)[name] = setting.owner(**{setting.field.name: value})
    else:
        OmegaConf.update(cfg, setting.key, value, merge=False)
    line = _refusal(capsys, lambda: preflight(cfg, get_registry()))
    assert line.startswith(f"error: {setting.key}=") and " is out of range: " in line, line


FIRST_OF_EACH_CONFIG = list({(s.selection, s.owner): s for s in reversed(SETTINGS) if not s.in_dict}.values())


@pytest.mark.parametrize("setting", FIRST_OF_EACH_CONFIG, ids=lambda s: f"{' '.join(s.selection)} {s.key}".strip())
def test_the_command_line_refuses_it_before_preparing_anything(setting: Setting, capsys) -> None:
    """The first setting of every config through the command line's whole check, Hydra's parsing of the
    value included."""
    value = setting.refused_values()[0]
    text = f"[{','.join(map(str, value))}]" if isinstance(value, list) else str(value)
    line = _refusal(capsys, lambda: prevalidate([*setting.selection, "task=toy", f"{setting.key}={text}"]))
    assert line.startswith(f"error: {setting.key}=") and " is out of range: " in line, line


def test_every_numeric_setting_declares_a_domain() -> None:
    """An int or float field (or a list of them) of the run's configs without `domain(...)` is a setting no one
    checks: declare what it allows beside its default (`domain(default)` alone allows any finite number)."""
    missing, seen = [], set()

    def visit(cls: type) -> None:
        if cls in seen:
            return
        seen.add(cls)
        hints = typing.get_type_hints(cls)
        for field in dataclasses.fields(cls):
            hint = hints[field.name]
            nested, _ = _config_type(hint)
            if nested is not None:
                visit(nested)
                continue
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            base = args[0] if typing.get_origin(hint) in (typing.Union, list) and len(args) == 1 else hint
            if base in (int, float) and domain_of(field) is None:
                missing.append(f"{cls.__module__}.{cls.__name__}.{field.name}")

    for _, _, cls in builtin_roots():
        visit(cls)
    assert len(seen) >= 16  # the run, its budget, task and llm (and llm operators), every agent and executor
    assert missing == [], f"numeric settings without a declared domain: {missing}"


@pytest.mark.parametrize("value, allowed", [
    (float("nan"), False), (float("inf"), False), (True, False), ("0.5", False), (0.0, True), (1, True), (1.5, False),
])
def test_a_probability_allows_finite_numbers_in_range_only(value: Any, allowed: bool) -> None:
    assert Domain(ge=0, le=1).allows(value) is allowed


@pytest.mark.parametrize("allowed, real, words", [
    (Domain(ge=0, le=2**32 - 1), False, "an integer from 0 to 4294967295"),
    (Domain(gt=0), True, "a number > 0"),
    (Domain(gt=0, le=1), True, "a number > 0 and <= 1"),
    (Domain(one_of=("auto", "none")), False, "one of auto, none"),
])
def test_the_allowed_values_in_words(allowed: Domain, real: bool, words: str) -> None:
    assert allowed.describe(real) == words


@dataclasses.dataclass
class PluginConfig:
    """A third-party agent's config: `domain` from the public API is all it takes to be checked."""

    name: str = "domain_probe"
    width: int = domain(3, ge=1)


def test_a_plugin_config_gets_the_same_check(monkeypatch, capsys) -> None:
    import researchbench.benchmark.plugins.manager as manager

    base = get_registry()
    spec = AgentSpec(name="domain_probe", config_class=PluginConfig, build=lambda cfg, task: None, uses_llm=False)
    registry = dataclasses.replace(base, agents={**base.agents, "domain_probe": spec})
    register_configs(registry)
    monkeypatch.setattr(manager, "get_registry", lambda: registry)
    line = _refusal(capsys, lambda: prevalidate(["agent=domain_probe", "task=toy", "agent.width=0"]))
    assert line == "error: agent.width=0 is out of range: an integer >= 1"
    assert out_of_range(PluginConfig(width=2)) == ""


# -- through the real CLI, as a user meets it ---------------------------------------------------------------------


@pytest.mark.parametrize("override, words", [
    ("seed=-1", "seed=-1 is out of range: an integer from 0 to 4294967295"),
    ("executor.max_parallel=-2", "executor.max_parallel=-2 is out of range: an integer >= 1"),
    ("budget.steps=-3", "budget.steps=-3 is out of range: an integer >= 1 (or null)"),
])
def test_the_cli_exits_2_with_one_line_before_preparing_or_running(override: str, words: str, tmp_path: Path) -> None:
    workspace, results = tmp_path / "workspace", tmp_path / "results"
    workspace.mkdir()
    proc = run_cli("agent=optuna", "task=causality", override, f"results_dir={results}", cwd=tmp_path,
                   env={"RESEARCHBENCH_WORKSPACE": str(workspace)})
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [f"error: {words}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["workspace"] and not any(workspace.iterdir()), \
        "the check comes before the task's workspace is read and before anything is written"


def test_a_sweep_names_the_job_with_the_bad_value(tmp_path: Path) -> None:
    proc = run_cli("-m", "agent=optuna", "task=causality", "seed=-1,0", f"results_dir={tmp_path}", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: job 0 of the sweep (agent=optuna task=causality seed=-1 "), line
    assert line.endswith("seed=-1 is out of range: an integer from 0 to 4294967295"), line
