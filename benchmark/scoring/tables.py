"""From runs to tables: one row per run, then groups over seeds, raw scores, per-operator statistics
(pandas DataFrames). Views across agents (agents x tasks, paired comparisons, the domain aggregate)
live in `comparisons`.

Runs are grouped by keys.GROUP_KEYS. A grouping that leaves out a key that must never be pooled
(budget, task version, LLM source) is refused when the runs it would merge differ in it; where an
agent appears with several budgets, LLM sources or configs, the views keep them apart as variants.
A task whose runs used several versions appears as one `task_id` per version (`causality@2.0.0`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.scoring import farbench, noise_gap, operators, ranges
from researchbench.benchmark.scoring.keys import GROUP_KEYS, NEVER_POOLED
from researchbench.benchmark.scoring.normalize import HEADLINE, achievement, fml_ni, unclipped
from researchbench.benchmark.scoring.process import process_metrics
from researchbench.benchmark.scoring.runs import RunRecord
from researchbench.benchmark.scoring.stats import bootstrap_ci, finite, mean_sem

VARIANT_KEYS = ("budget", "llm", "config")  # what tells one agent's runs apart in the agents x tasks views
# the per-run columns summarized over seeds in the groups table
SUMMARIZED = ("best_test", "achievement", "unclipped", "fml_ni", "auc_budget", "auc_fml", "val_test_gap",
              "valid_step_ratio", "spread_mean", "reach_mean", "IF", "CES", farbench.FA, farbench.HG, farbench.PE,
              farbench.PASS, "usd", "tokens_m", "wall_h")


def run_row(run: RunRecord, embedded: dict[str, Any] | None, range_mode: str = "manifest") -> dict[str, Any]:
    """Every per-run number: raw, the three normalized scores, process metrics, diagnostics, costs."""
    m = run.metric
    rng, no_range = ranges.resolve(m, run.domain, range_mode)
    base_test, best_test = run.score("baseline", "test"), run.score("best", "test")
    scored_test = best_test if best_test is not None else base_test  # FML-bench credits the baseline
    row: dict[str, Any] = {
        "agent": run.agent, "task": run.task, "version": run.task_version, "budget": run.budget_label,
        "llm": run.llm_label, "config": run.config_label, "seed": run.seed, "repeat": run.repeat,
        "domain": run.domain, "run": str(run.run_dir), "status": run.summary.status,
        "metric": m.name, "direction": m.direction,
        "baseline_val": run.score("baseline", "val"), "best_val": run.score("best", "val"),
        "baseline_test": base_test, "best_test": best_test,
        "fml_ni": fml_ni(rng, scored_test, base_test), "fml_range": rng.label if rng else f"none: {no_range}",
        "achievement": achievement(m, best_test), "unclipped": unclipped(m, best_test),
        "baseline_achievement": achievement(m, base_test),
        "experiments": len(run.experiments), "nodes": len(run.nodes),
    }
    row.update(noise_gap.gap_columns(run))
    row.update(process_metrics(run, embedded, rng))
    row.update(farbench.diagnostics(run))
    row.update(operators.cost_per_improvement(run))
    chains, fixed = operators.debug_chains(run)
    row.update({"debug_chains": chains, "debug_chains_fixed": fixed})
    return row


def runs_table(runs: list[RunRecord], embedded: dict[str, dict[str, Any]] | None = None,
               range_mode: str = "manifest") -> pd.DataFrame:
    rows = [run_row(r, (embedded or {}).get(str(r.run_dir)), range_mode) for r in runs]
    df = pd.DataFrame(rows).sort_values(["task", "version", "agent", "budget", "llm", "config", "seed", "repeat",
                                         "run"], kind="stable").reset_index(drop=True)
    mixed = df.groupby("task")["version"].transform("nunique") > 1
    df.insert(1, "task_id", np.where(mixed, df["task"] + "@" + df["version"], df["task"]))
    return df


def with_variant(df: pd.DataFrame) -> pd.DataFrame:
    """Add `variant`: the agent's name, plus budget/LLM source/config where the agent has more than one."""
    df = df.copy()
    counts = df.groupby("agent")[list(VARIANT_KEYS)].nunique()
    def label(r: pd.Series) -> str:
        extra = [r[k] for k in VARIANT_KEYS if counts.loc[r["agent"], k] > 1]
        return f"{r['agent']} [{', '.join(extra)}]" if extra else r["agent"]
    df["variant"] = df.apply(label, axis=1) if len(df) else []
    return df


def check_grouping(df: pd.DataFrame, by: list[str]) -> None:
    """Refuse a grouping that would average runs with different budgets, task versions or LLM sources."""
    unknown = [k for k in by if k not in GROUP_KEYS]
    if unknown or not by:
        raise UserError(f"--group-by {','.join(by)}: choose among {','.join(GROUP_KEYS)}")
    for never in (k for k in NEVER_POOLED if k not in by):
        inner = list(dict.fromkeys([*by, "task"])) if never == "version" else by  # versions differ across tasks
        for key, part in df.groupby(inner, sort=True):
            values = sorted(part[never].astype(str).unique())
            if len(values) > 1:
                where = ", ".join(f"{k}={v}" for k, v in zip(inner, key if isinstance(key, tuple) else (key,)))
                hint = ", or keep one budget with --budget" if never == "budget" else ""
                raise UserError(f"runs of {where} have different {never} values ({'; '.join(values)}); "
                                f"add {never} to --group-by{hint}")


def groups_table(df: pd.DataFrame, by: list[str] | tuple[str, ...] = GROUP_KEYS) -> pd.DataFrame:
    """Per group: n (trials), seeds, and per summarized column its mean, SEM and the n they used (a run
    without that number is left out of it); the headline and best_test also get a 95% bootstrap CI."""
    by = list(by)
    check_grouping(df, by)
    rows = []
    for key, part in df.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(by, key))
        row["n"] = len(part)
        row["seeds"] = ",".join(str(s) for s in sorted(part["seed"].unique()))
        for col in SUMMARIZED:
            values = part[col].astype(float).tolist()
            row[col], row[f"{col}_sem"] = mean_sem(values)
            row[f"{col}_n"] = len(finite(values))
            if col == HEADLINE or col == "best_test":
                row[f"{col}_ci_low"], row[f"{col}_ci_high"] = bootstrap_ci(values)
        row["regimes" + farbench.ON_TEST_ANCHORS] = ", ".join(
            f"{k}:{v}" for k, v in part[farbench.REGIME].value_counts().sort_index().items())
        rows.append(row)
    return pd.DataFrame(rows)


GROUP_PART_VALUES = 9  # value columns per part of the groups table in tables.md (keys repeat in each part)
SUFFIXES = ("_sem", "_n", "_ci_low", "_ci_high")


def groups_parts(groups: pd.DataFrame, by: list[str] | tuple[str, ...],
                 max_values: int = GROUP_PART_VALUES) -> list[tuple[str, pd.DataFrame]]:
    """The wide groups table (about 70 columns) as narrower tables for markdown: each repeats the group keys,
    n and seeds, and holds whole column families (a number with its SEM, n and CI), the headline first.
    groups.csv keeps every column in one table."""
    keys = [c for c in (*by, "n", "seeds") if c in groups.columns]
    families: dict[str, list[str]] = {}
    for column in (c for c in groups.columns if c not in keys):
        base = next((column.removesuffix(s) for s in SUFFIXES if column.endswith(s)
                     and column.removesuffix(s) in groups.columns), column)
        families.setdefault(base, []).append(column)
    order = sorted(families, key=lambda f: f != HEADLINE)  # stable: the headline, then as groups_table made them
    chunks: list[list[str]] = []
    for family in order:
        if chunks and len(chunks[-1]) + len(families[family]) <= max_values:
            chunks[-1] += families[family]
        else:
            chunks.append(list(families[family]))
    names = [[f for f in order if families[f][0] in chunk] for chunk in chunks]
    return [(", ".join(name), groups[keys + chunk]) for name, chunk in zip(names, chunks)]


def raw_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per task (version) and agent variant: baseline and best, val and hidden test, mean over n trials; the
    best node's val->test drop, raw and in the task's combined noise sd (noise_gap)."""
    df = with_variant(df)
    grouped = df.groupby(["task_id", "metric", "direction", "variant"], sort=True)
    table = grouped[["baseline_val", "best_val", "baseline_test", "best_test", "best_drop", "best_drop_sd"]].mean()
    table["best_test_sem"] = grouped["best_test"].agg(lambda s: mean_sem(s.tolist())[1])
    table["n"] = grouped.size()
    return table.reset_index()


def operators_table(runs: list[RunRecord]) -> pd.DataFrame:
    """Per agent variant and operator, summed over runs: attempts, outcomes and rates."""
    rows = []
    for run in runs:
        for r in operators.operator_counts(run):
            rows.append({"agent": run.agent, "budget": run.budget_label, "llm": run.llm_label,
                         "config": run.config_label, **r})
    if not rows:
        return pd.DataFrame(columns=["variant", "operator", "attempts"])
    df = with_variant(pd.DataFrame(rows))
    table = df.groupby(["variant", "operator"], sort=True)[
        ["attempts", "executed", "ok", "buggy", "edit_failed", "no_op", "agent_failed"]].sum()
    table["success_rate"] = table["ok"] / table["attempts"]
    table["edit_failure_rate"] = (table["edit_failed"] + table["no_op"]) / table["attempts"]
    table["bug_rate"] = table["buggy"] / table["executed"].replace(0, np.nan)
    return table.reset_index()


def debug_table(df: pd.DataFrame) -> pd.DataFrame:
    """Debug-chain fix rate and cost per improvement per agent variant."""
    df = with_variant(df)
    g = df.groupby("variant", sort=True)
    table = g[["debug_chains", "debug_chains_fixed", "improvements", "usd", "tokens_m"]].sum()
    table["debug_fix_rate"] = table["debug_chains_fixed"] / table["debug_chains"].replace(0, np.nan)
    table["usd_per_improvement"] = table["usd"] / table["improvements"].replace(0, np.nan)
    table["tokens_per_improvement"] = table["tokens_m"] * 1e6 / table["improvements"].replace(0, np.nan)
    return table.reset_index()
