"""Views across agents, each saying what it covers: agents x tasks means over the tasks every variant
has (named, with their count), paired comparisons with the seeds they would need for 80% power, and
FARBench's domain-balanced aggregate, where a missing task makes a domain "incomplete".

Ranking or comparing variants that share fewer than half of the tasks they ran between them is
refused: the means over tasks are withheld (with a note), and `--compare` exits with one line.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.scoring.normalize import HEADLINE
from researchbench.benchmark.scoring.stats import domain_balanced, paired
from researchbench.benchmark.scoring.tables import with_variant

SHARED_MEAN = "MEAN (shared tasks)"


def coverage(tasks_of: dict[str, set[str]]) -> tuple[list[str], list[str]]:
    """(every task any variant ran, the tasks all of them ran)."""
    sets = list(tasks_of.values())
    return sorted(set().union(*sets)), sorted(set.intersection(*sets)) if sets else []


def enough_overlap(union: list[str], shared: list[str]) -> bool:
    """Whether variants may be ranked or compared: they share at least half of the tasks they ran."""
    return 2 * len(shared) >= len(union)


def trials(counts: pd.Series) -> str:
    """n over a row's cells: "3", or "2-3" when cells used different numbers of trials."""
    low, high = int(counts.min()), int(counts.max())
    return str(low) if low == high else f"{low}-{high}"


def rank_note(df: pd.DataFrame) -> str:
    """One line when the variants in the tables share fewer than half their tasks (else "")."""
    df = with_variant(df)
    union, shared = coverage(df.groupby("variant")["task_id"].agg(set).to_dict())
    if enough_overlap(union, shared):
        return ""
    return (f"agents are not ranked: the variants share {len(shared)} of the {len(union)} tasks they ran "
            f"({', '.join(shared) or 'none'}), fewer than half, so '{SHARED_MEAN}' is left empty; select agents "
            f"or tasks that overlap (--agent, --task, --suite)")


def score_pivot(df: pd.DataFrame, column: str) -> pd.DataFrame:
    """Agent variants x tasks: the mean of `column` over trials; `MEAN (shared tasks)` over the tasks every
    variant has a value for, named in `shared tasks`; `n` the trials per cell; `missing` what a variant lacks."""
    df = with_variant(df)
    table = df.pivot_table(index="variant", columns="task_id", values=column, aggfunc="mean", dropna=False)
    tasks = list(table.columns)
    shared = [t for t in tasks if table[t].notna().all()]
    union, ran_by_all = coverage(df.groupby("variant")["task_id"].agg(set).to_dict())
    if enough_overlap(union, ran_by_all):
        table[SHARED_MEAN] = table[shared].mean(axis=1) if shared else math.nan
        table["shared tasks"] = f"{len(shared)} of {len(tasks)}: {', '.join(shared) or 'none'}"
    else:
        table[SHARED_MEAN] = math.nan
        table["shared tasks"] = f"{len(ran_by_all)} of {len(union)}, fewer than half: not ranked"
    counts = df.groupby(["variant", "task_id"]).size()
    table["n"] = [trials(counts.loc[v]) for v in table.index]
    table["missing"] = [", ".join(t for t in tasks if pd.isna(table.loc[v, t])) or "-" for v in table.index]
    return table


def _power_note(seeds: float, needed: float) -> str:
    if math.isnan(needed):
        return "fewer than 2 pairs: no spread to judge power by"
    if math.isinf(needed):
        return "no mean difference: no number of seeds detects it"
    if needed > seeds:
        return f"too few seeds: about {needed:g} per task detect this difference at 80% power"
    return "enough seeds for 80% power"


def paired_table(df: pd.DataFrame, first: str, second: str, column: str = HEADLINE) -> pd.DataFrame:
    """`first` vs `second` (agent variants), per budget: over all the tasks both ran, then per task; pairs
    are (task, seed, repeat), and each row says how many seeds per task 80% power would need."""
    df = with_variant(df)
    chosen = {name: _runs_named(df, name) for name in (first, second)}
    rows: list[dict[str, Any]] = []
    for budget, part in df.groupby("budget"):
        def cells(name: str) -> dict[tuple, float]:
            sel = part[chosen[name].loc[part.index]]
            return {(t, s, r): float(v) for t, s, r, v in zip(sel["task_id"], sel["seed"], sel["repeat"], sel[column])}
        a, b = cells(first), cells(second)
        if not a or not b:
            continue
        union, shared = coverage({first: {k[0] for k in a}, second: {k[0] for k in b}})
        if not enough_overlap(union, shared):
            raise UserError(f"--compare {first} {second}: at budget {budget} they share {len(shared)} of the "
                            f"{len(union)} tasks they ran ({', '.join(shared) or 'none'}); a comparison needs at "
                            f"least half of them: run the missing tasks, or select tasks with --task or --suite")
        per_task = [(t, [t]) for t in shared] if len(shared) > 1 else []  # one task: the overall row is it
        for scope, tasks in [(f"all shared tasks ({len(shared)})", shared), *per_task]:
            result = paired({k: v for k, v in a.items() if k[0] in tasks}, {k: v for k, v in b.items() if k[0] in tasks})
            seeds = result["n"] / len(tasks)
            needed = math.ceil(result["pairs_needed"] / len(tasks)) if math.isfinite(result["pairs_needed"]) \
                else result["pairs_needed"]
            rows.append({"first": first, "second": second, "budget": budget, "score": column, "scope": scope,
                         "tasks": len(tasks), **result, "seeds_per_task": seeds, "seeds_needed_80": needed,
                         "power": _power_note(seeds, needed)})
    if not rows:
        budgets = {name: sorted(map(str, df.loc[chosen[name], "budget"].unique())) for name in (first, second)}
        if not set(budgets[first]) & set(budgets[second]):
            raise UserError(f"--compare {first} {second}: their budgets differ ({first}: {', '.join(budgets[first])}; "
                            f"{second}: {', '.join(budgets[second])}); runs compare only at the same budget: run one "
                            f"of them at the other's budget")
        raise UserError(f"--compare {first} {second}: they share no budget, task and seed to compare on")
    return pd.DataFrame(rows)


def _runs_named(df: pd.DataFrame, name: str) -> pd.Series:
    """The rows `--compare` means by `name`: a variant's, or an agent's whose variants differ only by budget
    (the comparison is made per budget anyway)."""
    if name in set(df["variant"]):
        return df["variant"] == name
    rows = df["agent"] == name
    if not rows.any():
        raise UserError(f"--compare {name}: no such agent in the selection (have: {', '.join(sorted(set(df['variant'])))})")
    variants = sorted(set(df.loc[rows, "variant"]))
    if df.loc[rows, ["llm", "config"]].nunique().max() > 1:
        raise UserError(f"--compare {name}: agent {name} ran with more than one LLM or config; name one of its "
                        f"variants: {'; '.join(repr(v) for v in variants)}")
    return rows


def domain_table(df: pd.DataFrame, missing_zero: bool = False) -> pd.DataFrame:
    """FARBench's domain-balanced aggregate per agent variant over every task in the selection: a domain
    with a task the variant lacks is "incomplete" unless `missing_zero` (FARBench counts it 0)."""
    df = with_variant(df)
    tasks = sorted(df["task_id"].unique())
    domains = dict(zip(df["task_id"], df["domain"]))
    rows = []
    for variant, part in df.groupby("variant", sort=True):
        scores = part.groupby("task_id")["achievement"].mean().to_dict()
        missing = [t for t in tasks if t not in scores]
        rows.append({"variant": variant, **domain_balanced(scores, domains, tasks, missing_zero),
                     "n": trials(part.groupby("task_id").size()),
                     "missing": ", ".join(missing) + (" (counted 0)" if missing_zero else "") if missing else "-"})
    return pd.DataFrame(rows).set_index("variant")
