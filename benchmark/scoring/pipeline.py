"""The scorer end to end: select runs, embed, compute every table, write CSV, markdown, plots and HTML.

compute_agent_metrics.py is a thin CLI over `score()`. Nothing is ever written inside a run directory:
each run's own best_solution/ and report.html are the run's (written at its end), and scoring only reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.inert_text import csv_safe, inert
from researchbench.benchmark.scoring import comparisons, keys, noise_gap, tables
from researchbench.benchmark.scoring.normalize import HEADLINE_WHY
from researchbench.benchmark.scoring.runs import RunRecord
from researchbench.benchmark.scoring.selection import NOT_SCORED_COLUMNS, Filters, Selection, select_runs


@dataclass
class Options:
    results: Path
    out: Path
    agents: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    suite: str | None = None
    budget: str | None = None  # a budget label (e.g. 50exp/$10/24h) or an experiment count
    unfinished: bool = False  # score runs that are still running or were interrupted (never aborted ones)
    repeats_independent: bool = False  # count runs that repeat a seed in one group as separate trials
    group_by: list[str] = field(default_factory=lambda: list(keys.GROUP_KEYS))
    compare: tuple[str, str] | None = None
    ranges: str = "manifest"  # the NI ranges: "manifest" (ours) or "fml" (FML-bench's RANGE_META)
    farbench_missing_zero: bool = False  # FARBench's convention: a missing task counts 0 in its domain
    embeddings: bool = True
    embedding_model: str | None = None
    embedding_cache: Path | None = None
    device: str = "auto"
    batch_size: int = 16
    plots: bool = True
    html: bool = True
    mlflow: str | None = None  # export to MLflow: a tracking URI or local folder ("" = <out>/mlruns), None = no


INDEXED = {"achievement", "unclipped", "fml_ni", "domains"}  # tables whose index is the agent variant


def markdown(df: pd.DataFrame, index: bool = False) -> str:
    """A GitHub markdown table (pandas' to_markdown needs tabulate, which is not a dependency)."""
    if index:
        df = df.reset_index()
    def cell(v) -> str:
        if isinstance(v, float):
            return "–" if math.isnan(v) else f"{v:.4g}"
        return str(v).replace("|", "\\|").replace("\n", " ")
    head = "| " + " | ".join(cell(c) for c in df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    return "\n".join([head, rule, *("| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False))])


def select(options: Options, warn: Callable[[str], None]) -> Selection:
    tasks = list(options.tasks)
    if options.suite:
        from researchbench.benchmark.tasks.suites import suite_tasks

        suite = suite_tasks(options.suite)
        tasks = [t for t in suite if t in tasks] if tasks else suite
    filters = Filters(agents=options.agents, tasks=tasks, budget=options.budget)
    return select_runs(options.results, warn, filters, unfinished=options.unfinished,
                       repeats_independent=options.repeats_independent)


def embed(runs: list[RunRecord], options: Options, say: Callable[[str], None]) -> dict | None:
    if not options.embeddings:
        return None
    from researchbench.benchmark.scoring.embeddings import (DEFAULT_CACHE, GRAPHCODEBERT, EmbeddingUnavailable,
                                                            Embedder, embed_runs)

    try:
        embedder = Embedder(options.embedding_model or GRAPHCODEBERT, options.embedding_cache or DEFAULT_CACHE,
                            device=options.device, batch_size=options.batch_size)
        embedded = embed_runs(runs, embedder)
    except EmbeddingUnavailable as exc:
        say(f"note: {exc}")
        return None
    say(f"embeddings: {embedder.hits} snapshots from the cache, {embedder.computed} computed ({embedder.key})")
    return embedded


def sections(options: Options) -> list[tuple[str, str, str]]:
    """(table name, heading, what it shows) for every table, in report order; shared by markdown and HTML."""
    ranges = f"ranges: {options.ranges}" + (" (FML-bench's RANGE_META)" if options.ranges == "fml" else
                                            " (p_best = best_possible, p_worst = floor, from our manifests)")
    return [
        ("not_scored", "Not scored", "runs left out of every table and aggregate, with the reason: aborted by an "
                                     "outage, not finished, unreadable, or a repeated seed counted once"),
        ("achievement", "Headline: clipped achievement (agents x tasks, mean over trials)",
         HEADLINE_WHY + f"; '{comparisons.SHARED_MEAN}' is over the tasks named in 'shared tasks'; n = trials per "
                        "task"),
        ("paired", "Paired comparison", "first - second on the pairs (task, seed) both ran: over all shared tasks, "
                                        "then per task when there are several; 95% bootstrap CI; win rate (ties "
                                        "half); seeds per task a paired t-test needs for 80% power (two-sided alpha "
                                        "0.05)"),
        ("groups", "Groups over seeds: n, mean, SEM and 95% bootstrap CI",
         "grouped by " + ", ".join(options.group_by) + "; budgets, task versions and LLM sources are never pooled; "
         "n = trials used (col_n: those with a value for that column); fml_ni and the AUCs on the " + ranges
         + "; FA, HG, PE, pass@0.5 and regimes score validation results against the hidden-test floor/target "
           "(val on test anchors)"),
        ("unclipped", "Unclipped normalized score", "(s - floor) / (target - floor): regressions negative, overshoot "
                                                    "above 1"),
        ("fml_ni", f"FML-bench normalized improvement ({ranges})",
         "FML-bench's formula max(0, sign (a - b) / |p_best - p_worst|) with the " + ranges
         + "; per-run ranges in runs.csv column fml_range"),
        ("domains", "FARBench domain-balanced score", "100 x mean over domains of the mean achievement of the domain's "
         + ("tasks; a missing task counts 0 (--farbench-missing-zero)" if options.farbench_missing_zero else
            "tasks; a domain missing a task is 'incomplete' (--farbench-missing-zero counts it 0, as FARBench)")),
        ("raw", "Raw scores", "baseline and best, validation and hidden test, mean over n trials; best_drop: how much "
                              "worse the best-val node scored on test than on val, best_drop_sd: the same in the "
                              "task's combined noise sd (see the notes)"),
        ("operators", "Operators", "per operator: outcomes and rates"),
        ("debug_and_cost", "Debug chains and cost per improvement", ""),
        ("runs", "Per run", "every metric of every run (see docs/metrics.md)"),
    ]


def score(options: Options, say: Callable[[str], None]) -> dict[str, pd.DataFrame]:
    """Compute and write everything; returns the tables by name (`notes`: the lines a reader must see)."""
    out = options.out
    if out.resolve().is_relative_to(options.results.resolve()):
        raise UserError(f"--out {out} is inside the results being scored; choose another directory")
    if options.mlflow is not None:  # a bad store is one line, before any note about the runs
        from researchbench.benchmark.scoring.mlflow_export import check_store

        check_store(options.mlflow or None, out, options.results)
    chosen = select(options, say)
    runs = chosen.runs
    embedded = embed(runs, options, say)
    df = tables.with_variant(tables.runs_table(runs, embedded, options.ranges))
    notes = list(chosen.notes)
    for task, why in sorted(set(zip(df["task_id"], df["fml_range"]))):
        if why.startswith("none: "):
            notes.append(f"fml_ni of {task} is empty under --ranges {options.ranges}: {why[6:]}")
    if rank := comparisons.rank_note(df):
        notes.append(rank)
    notes += noise_gap.task_notes(df) if len(df) else []
    results: dict[str, pd.DataFrame] = {
        "notes": pd.DataFrame({"note": notes}),
        "not_scored": pd.DataFrame(chosen.not_scored, columns=list(NOT_SCORED_COLUMNS)),
        "runs": df,
        "raw": tables.raw_table(df),
        "achievement": comparisons.score_pivot(df, "achievement"),
        "unclipped": comparisons.score_pivot(df, "unclipped"),
        "fml_ni": comparisons.score_pivot(df, "fml_ni"),
        "groups": tables.groups_table(df, options.group_by),
        "domains": comparisons.domain_table(df, options.farbench_missing_zero),
        "operators": tables.operators_table(runs),
        "debug_and_cost": tables.debug_table(df),
    }
    if options.compare:
        results["paired"] = comparisons.paired_table(df, *options.compare)
    for note in notes[len(chosen.notes):]:  # selection's notes were said as they arose
        say(f"note: {note}")
    out.mkdir(parents=True, exist_ok=True)
    for name, table in results.items():
        csv_safe(table).to_csv(out / f"{name}.csv", index=name in INDEXED)  # agent text: no formulas
    md = [f"# Scores ({len(runs)} runs scored, {len(chosen.not_scored)} not scored)", "", HEADLINE_WHY, "",
          *(f"- note: {n}" for n in notes), ""]
    for name, heading, why in sections(options):
        if name == "groups" and len(results[name]):  # ~70 columns: parts that fit a page; groups.csv has all
            parts = tables.groups_parts(results[name], options.group_by)
            md += [f"## {heading}", "", why + f"; in {len(parts)} parts, each with the group keys (every column in "
                                              "one table: groups.csv)", ""]
            for i, (families, part) in enumerate(parts, 1):
                md += [f"### Groups, part {i} of {len(parts)}: {families}", "", markdown(part), ""]
        elif name in results and name != "runs":
            md += [f"## {heading}", "", why, "", markdown(results[name], index=name in INDEXED)
                   if len(results[name]) else "(none)", ""]
    (out / "tables.md").write_text(inert("\n".join(md)))
    plots = _plots(runs, df, say) if options.plots else []
    plot_dir = out / "plots"
    for i, (name, png) in enumerate(plots):
        plot_dir.mkdir(exist_ok=True)
        (plot_dir / f"{i:02d}-{''.join(c if c.isalnum() else '_' for c in name)}.png").write_bytes(png)
    if options.html:
        _html(runs, results, plots, options)
    if options.mlflow is not None:
        from researchbench.benchmark.scoring.mlflow_export import export

        export(runs, df, options.mlflow or None, out, options.results, say)
    # what the closing line may name: plots/ only if a plot was drawn (matplotlib may be missing)
    results["written"] = pd.DataFrame({"file": ["tables.md", "*.csv", *(["plots/"] if plots else []),
                                                *(["report.html"] if options.html else []),
                                                *(["mlruns/"] if options.mlflow == "" else [])]})
    return results


def _plots(runs: list[RunRecord], df: pd.DataFrame, say: Callable[[str], None]) -> list[tuple[str, bytes]]:
    try:
        from researchbench.benchmark.scoring import plots
    except ImportError:
        say("note: matplotlib is not installed, so no plots (pip install -c requirements/lock.txt -e '.[metrics]')")
        return []
    variant_of = dict(zip(df["run"], df["variant"]))
    return [plots.performance_profile(df), *plots.curves(runs, variant_of)]


def _html(runs: list[RunRecord], results: dict[str, pd.DataFrame], plots: list[tuple[str, bytes]],
          options: Options) -> None:
    from researchbench.benchmark.scoring import report

    run_dir = options.out / "runs"
    run_dir.mkdir(exist_ok=True)
    links = []
    for i, run in enumerate(runs):
        name = f"{i:04d}.html"
        (run_dir / name).write_text(report.run_html(run))
        links.append((f"{run.agent} / {run.task} / seed {run.seed} / {run.budget_label} ({run.run_dir.name})",
                      f"runs/{name}"))
    shown = [(heading, why, results[name].drop(columns=["run"]) if name == "runs" else results[name])
             for name, heading, why in sections(options) if name in results]
    html = report.comparison_html(f"researchbench scores: {options.results}", list(results["notes"]["note"]), shown,
                                  plots, links)
    (options.out / "report.html").write_text(html)
