"""From runs to tables: one row per run, then groups over seeds, the agents x tasks views, paired
comparisons, the domain-balanced aggregate and per-operator statistics (pandas DataFrames).

Runs are grouped by (agent, task, budget, config). A grouping that leaves the budget out is refused
when the runs it would merge had different budgets; where an agent appears with several budgets or
configs, the agents x tasks views keep them apart as separate rows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from benchmark.errors import UserError
from benchmark.scoring import farbench, operators
from benchmark.scoring.normalize import HEADLINE, achievement, fml_ni, unclipped
from benchmark.scoring.process import process_metrics
from benchmark.scoring.runs import RunRecord
from benchmark.scoring.stats import bootstrap_ci, domain_balanced, mean_sem, paired

GROUP_KEYS = ("agent", "task", "budget", "config")
# the per-run columns summarized over seeds in the groups table
SUMMARIZED = ("best_test", "achievement", "unclipped", "fml_ni", "auc_budget", "auc_fml", "val_test_gap",
              "valid_step_ratio", "spread_mean", "reach_mean", "IF", "CES", "FA", "HG", "PE", "pass@0.5",
              "usd", "tokens_m", "wall_h")


def run_row(run: RunRecord, embedded: dict[str, Any] | None) -> dict[str, Any]:
    """Every per-run number: raw, the three normalized scores, process metrics, diagnostics, costs."""
    m = run.metric
    base_test, best_test = run.score("baseline", "test"), run.score("best", "test")
    scored_test = best_test if best_test is not None else base_test  # FML-bench credits the baseline
    row: dict[str, Any] = {
        "agent": run.agent, "task": run.task, "budget": run.budget_label, "config": run.config_label,
        "seed": run.seed, "domain": run.domain, "run": str(run.run_dir), "status": run.summary.get("status"),
        "metric": m.name, "direction": m.direction,
        "baseline_val": run.score("baseline", "val"), "best_val": run.score("best", "val"),
        "baseline_test": base_test, "best_test": best_test,
        "fml_ni": fml_ni(m, scored_test, base_test),
        "achievement": achievement(m, best_test), "unclipped": unclipped(m, best_test),
        "baseline_achievement": achievement(m, base_test),
        "experiments": len(run.experiments), "nodes": len(run.nodes),
    }
    row.update(process_metrics(run, embedded))
    row.update(farbench.diagnostics(run))
    row.update(operators.cost_per_improvement(run))
    chains, fixed = operators.debug_chains(run)
    row.update({"debug_chains": chains, "debug_chains_fixed": fixed})
    return row


def runs_table(runs: list[RunRecord], embedded: dict[str, dict[str, Any]] | None = None) -> pd.DataFrame:
    rows = [run_row(r, (embedded or {}).get(str(r.run_dir))) for r in runs]
    return pd.DataFrame(rows).sort_values(["task", "agent", "budget", "config", "seed", "run"], kind="stable") \
        .reset_index(drop=True)


def with_variant(df: pd.DataFrame) -> pd.DataFrame:
    """Add `variant`: the agent's name, plus budget/config where the agent appears with more than one."""
    df = df.copy()
    counts = df.groupby("agent")[["budget", "config"]].nunique()
    def label(r: pd.Series) -> str:
        extra = [r[k] for k in ("budget", "config") if counts.loc[r["agent"], k] > 1]
        return f"{r['agent']} [{', '.join(extra)}]" if extra else r["agent"]
    df["variant"] = df.apply(label, axis=1) if len(df) else []
    return df


def check_grouping(df: pd.DataFrame, by: list[str]) -> None:
    """Refuse a grouping that would average runs with different budgets."""
    unknown = [k for k in by if k not in GROUP_KEYS]
    if unknown or not by:
        raise UserError(f"--group-by {','.join(by)}: choose among {','.join(GROUP_KEYS)}")
    if "budget" in by:
        return
    for key, part in df.groupby(by, sort=True):
        budgets = sorted(part["budget"].unique())
        if len(budgets) > 1:
            where = ", ".join(f"{k}={v}" for k, v in zip(by, key if isinstance(key, tuple) else (key,)))
            raise UserError(f"runs of {where} have different budgets ({'; '.join(budgets)}); "
                            f"add budget to --group-by, or keep one budget with --budget")


def groups_table(df: pd.DataFrame, by: list[str] | tuple[str, ...] = GROUP_KEYS) -> pd.DataFrame:
    """Per group: seeds, and mean, SEM and 95% bootstrap CI of each summarized column."""
    by = list(by)
    check_grouping(df, by)
    rows = []
    for key, part in df.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(by, key))
        row["runs"] = len(part)
        row["seeds"] = ",".join(str(s) for s in sorted(part["seed"].unique()))
        for col in SUMMARIZED:
            values = part[col].astype(float).tolist()
            row[col], row[f"{col}_sem"] = mean_sem(values)
            if col == HEADLINE or col == "best_test":
                row[f"{col}_ci_low"], row[f"{col}_ci_high"] = bootstrap_ci(values)
        row["regimes"] = ", ".join(f"{k}:{v}" for k, v in part["regime"].value_counts().sort_index().items())
        rows.append(row)
    return pd.DataFrame(rows)


def raw_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per task and agent variant: baseline and best, val and hidden test, mean over seeds."""
    df = with_variant(df)
    grouped = df.groupby(["task", "metric", "direction", "variant"], sort=True)
    table = grouped[["baseline_val", "best_val", "baseline_test", "best_test"]].mean()
    table["best_test_sem"] = grouped["best_test"].agg(lambda s: mean_sem(s.tolist())[1])
    table["runs"] = grouped.size()
    return table.reset_index()


def score_pivot(df: pd.DataFrame, column: str) -> pd.DataFrame:
    """Agent variants x tasks of the mean of `column` over seeds; the means over tasks are taken only
    over tasks every variant has (`MEAN (shared tasks)`), and `missing` names what a variant lacks."""
    df = with_variant(df)
    table = df.pivot_table(index="variant", columns="task", values=column, aggfunc="mean")
    tasks = list(table.columns)
    shared = [t for t in tasks if table[t].notna().all()]
    table["MEAN (shared tasks)"] = table[shared].mean(axis=1) if shared else math.nan
    table["shared tasks"] = f"{len(shared)}/{len(tasks)}"
    table["missing"] = [", ".join(t for t in tasks if pd.isna(table.loc[v, t])) or "-" for v in table.index]
    return table


def paired_table(df: pd.DataFrame, first: str, second: str, column: str = HEADLINE) -> pd.DataFrame:
    """`first` vs `second` (agent variants) on every task and seed both ran with the same budget."""
    df = with_variant(df)
    known = set(df["variant"])
    for name in (first, second):
        if name not in known:
            raise UserError(f"--compare {name}: no such agent in the selection (have: {', '.join(sorted(known))})")
    rows = []
    for budget, part in df.groupby("budget"):
        def cells(variant: str) -> dict[tuple, float]:
            sel = part[part["variant"] == variant]
            return {(t, s): float(v) for t, s, v in zip(sel["task"], sel["seed"], sel[column])}
        a, b = cells(first), cells(second)
        if not a or not b:
            continue
        result = paired(a, b)
        rows.append({"first": first, "second": second, "budget": budget, "score": column, **result})
    if not rows:
        raise UserError(f"--compare {first} {second}: they share no budget, task and seed to compare on")
    return pd.DataFrame(rows)


def domain_table(df: pd.DataFrame) -> pd.DataFrame:
    """FARBench's domain-balanced aggregate per agent variant (domain denominators: all tasks present)."""
    df = with_variant(df)
    tasks = sorted(df["task"].unique())
    domains = dict(zip(df["task"], df["domain"]))
    rows = []
    for variant, part in df.groupby("variant", sort=True):
        scores = part.groupby("task")["achievement"].mean().to_dict()
        rows.append({"variant": variant, **domain_balanced(scores, domains, tasks)})
    return pd.DataFrame(rows).set_index("variant")


def operators_table(runs: list[RunRecord]) -> pd.DataFrame:
    """Per agent variant and operator, summed over runs: attempts, outcomes and rates."""
    rows = []
    for run in runs:
        for r in operators.operator_counts(run):
            rows.append({"agent": run.agent, "budget": run.budget_label, "config": run.config_label, **r})
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
