"""`--cfg job` shows the run's config as the run uses it: the budget resolved against the task's manifest
(not `null`), and every field's type; still valid YAML, for one run and for each job of a sweep."""

from __future__ import annotations

import yaml

from conftest import run_cli


def _budget_lines(text: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index("budget:  # BudgetConfig")
    return [line.strip() for line in lines[start + 1:start + 7]]


def test_cfg_job_resolves_the_budget_and_types_every_field() -> None:
    proc = run_cli("task=toy", "budget.steps=2", "--cfg", "job")
    assert proc.returncode == 0, proc.stderr
    assert _budget_lines(proc.stdout) == [
        "steps: 2  # int, set for this run",
        "compute_hours: 1.0  # float, from the task manifest",
        "usd: 1.0  # float, from the task manifest",
        "step_timeout_s: 30.0  # float, from the task manifest",
        "test_timeout_s: 60.0  # float, from the task manifest: 0 means 2 x step_timeout_s",
        "max_unexecuted_in_a_row: 10  # int",
    ]
    body = [line for line in proc.stdout.splitlines() if not line.startswith("#")]
    untyped = [line for line in body if "  # " not in line]
    assert not untyped, untyped
    for expected in ("seed: 0  # int", "  bwrap: null  # str | None", "  gpus: []  # list[int]",
                     "agent:  # OptunaConfig"):
        assert expected in proc.stdout.splitlines(), expected
    parsed = yaml.safe_load(proc.stdout)
    assert parsed["budget"]["steps"] == 2 and parsed["task"]["name"] == "toy"


def test_cfg_job_shows_no_llm_settings_for_an_agent_that_asks_no_llm() -> None:
    """Issue 26 (new user 7): optuna calls no LLM, so `llm.model: gpt-4o-mini` would be a false statement;
    an LLM agent's view keeps every llm.* field with its type."""
    proc = run_cli("agent=optuna", "task=toy", "--cfg", "job")
    assert proc.returncode == 0, proc.stderr
    assert "llm: null  # LLMConfig, not used: agent optuna asks no LLM, so no llm.* setting changes this run" \
        in proc.stdout.splitlines()
    assert "model:" not in proc.stdout and yaml.safe_load(proc.stdout)["llm"] is None
    llm = run_cli("agent=greedy", "task=toy", "--cfg", "job")
    assert llm.returncode == 0, llm.stderr
    for expected in ("llm:  # LLMConfig", "  model: gpt-4o-mini  # str", "  operators: {}  # dict[str, OperatorLLMConfig]"):
        assert expected in llm.stdout.splitlines(), expected


def test_cfg_job_for_each_job_of_a_sweep() -> None:
    proc = run_cli("-m", "task=toy", "budget.steps=1,3", "--cfg", "job")
    assert proc.returncode == 0, proc.stderr
    jobs = proc.stdout.split("# job ")[1:]
    assert [_budget_lines(job)[:2] for job in jobs] == [
        [f"steps: {n}  # int, set for this run", "compute_hours: 1.0  # float, from the task manifest"] for n in (1, 3)]


def test_cfg_hydra_is_left_to_hydra() -> None:
    proc = run_cli("task=toy", "--cfg", "hydra")
    assert proc.returncode == 0 and proc.stdout.startswith("hydra:") and "# str" not in proc.stdout
