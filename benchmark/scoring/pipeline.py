"""The scorer end to end: select runs, embed, compute every table, write CSV, markdown, plots and HTML.

compute_agent_metrics.py is a thin CLI over `score()`. Nothing is written inside the results tree
except each run's own best_solution/ and report.html (refreshed here, as the run's end writes them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from benchmark.errors import UserError
from benchmark.scoring import tables
from benchmark.scoring.normalize import HEADLINE_WHY
from benchmark.scoring.runs import RunRecord, load_runs


@dataclass
class Options:
    results: Path
    out: Path
    agents: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    suite: str | None = None
    budget: str | None = None  # a budget label (e.g. 50exp/$10/24h) or an experiment count
    unfinished: bool = False  # score runs that are still running or were interrupted
    group_by: list[str] = field(default_factory=lambda: list(tables.GROUP_KEYS))
    compare: tuple[str, str] | None = None
    embeddings: bool = True
    embedding_model: str | None = None
    embedding_cache: Path | None = None
    device: str = "auto"
    batch_size: int = 16
    plots: bool = True
    html: bool = True
    export_runs: bool = True


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


def select(options: Options, warn: Callable[[str], None]) -> list[RunRecord]:
    tasks = list(options.tasks)
    if options.suite:
        from benchmark.suites import suite_tasks

        suite = suite_tasks(options.suite)
        tasks = [t for t in suite if t in tasks] if tasks else suite
    runs = load_runs(options.results, warn, agents=options.agents or None, tasks=tasks or None,
                     unfinished=options.unfinished)
    if options.budget:
        wanted = options.budget
        runs = [r for r in runs if r.budget_label == wanted or str(r.budget_steps) == wanted]
        if not runs:
            raise UserError(f"--budget {wanted}: no run has that budget (give a label like 50exp/$10/24h "
                            f"or an experiment count)")
    return runs


def embed(runs: list[RunRecord], options: Options, say: Callable[[str], None]) -> dict | None:
    if not options.embeddings:
        return None
    from benchmark.scoring.embeddings import DEFAULT_CACHE, GRAPHCODEBERT, EmbeddingUnavailable, Embedder, embed_runs

    try:
        embedder = Embedder(options.embedding_model or GRAPHCODEBERT, options.embedding_cache or DEFAULT_CACHE,
                            device=options.device, batch_size=options.batch_size)
        embedded = embed_runs(runs, embedder)
    except EmbeddingUnavailable as exc:
        say(f"note: {exc}")
        return None
    say(f"embeddings: {embedder.hits} snapshots from the cache, {embedder.computed} computed ({embedder.key})")
    return embedded


def score(options: Options, say: Callable[[str], None]) -> dict[str, pd.DataFrame]:
    """Compute and write everything; returns the tables by name."""
    out = options.out
    if out.resolve().is_relative_to(options.results.resolve()):
        raise UserError(f"--out {out} is inside the results being scored; choose another directory")
    runs = select(options, say)
    embedded = embed(runs, options, say)
    df = tables.runs_table(runs, embedded)
    df = tables.with_variant(df)
    results: dict[str, pd.DataFrame] = {
        "runs": df,
        "raw": tables.raw_table(df),
        "achievement": tables.score_pivot(df, "achievement"),
        "unclipped": tables.score_pivot(df, "unclipped"),
        "fml_ni": tables.score_pivot(df, "fml_ni"),
        "groups": tables.groups_table(df, options.group_by),
        "domains": tables.domain_table(df),
        "operators": tables.operators_table(runs),
        "debug_and_cost": tables.debug_table(df),
    }
    if options.compare:
        results["paired"] = tables.paired_table(df, *options.compare)
    out.mkdir(parents=True, exist_ok=True)
    indexed = {"achievement", "unclipped", "fml_ni", "domains"}
    md = [f"# Scores ({len(runs)} runs)", "", HEADLINE_WHY, ""]
    for name, table in results.items():
        table.to_csv(out / f"{name}.csv", index=name in indexed)
        if name != "runs":
            md += [f"## {name}", "", markdown(table, index=name in indexed), ""]
    (out / "tables.md").write_text("\n".join(md))
    plots = _plots(runs, df, say) if options.plots else []
    plot_dir = out / "plots"
    for i, (name, png) in enumerate(plots):
        plot_dir.mkdir(exist_ok=True)
        (plot_dir / f"{i:02d}-{''.join(c if c.isalnum() else '_' for c in name)}.png").write_bytes(png)
    if options.html:
        _html(runs, results, plots, options, say)
    return results


def _plots(runs: list[RunRecord], df: pd.DataFrame, say: Callable[[str], None]) -> list[tuple[str, bytes]]:
    try:
        from benchmark.scoring import plots
    except ImportError:
        say("note: matplotlib is not installed, so no plots (pip install -e .[metrics])")
        return []
    variant_of = dict(zip(df["run"], df["variant"]))
    return [plots.performance_profile(df), *plots.curves(runs, variant_of)]


def _html(runs: list[RunRecord], results: dict[str, pd.DataFrame], plots: list[tuple[str, bytes]],
          options: Options, say: Callable[[str], None]) -> None:
    from benchmark.scoring import report
    from benchmark.scoring.export import export_best_solution

    run_dir = options.out / "runs"
    run_dir.mkdir(exist_ok=True)
    links = []
    for i, run in enumerate(runs):
        name = f"{i:04d}.html"
        (run_dir / name).write_text(report.run_html(run))
        if options.export_runs and run.summary.get("status") == "finished":
            try:
                export_best_solution(run)
            except OSError as exc:
                say(f"note: {run.run_dir}: best_solution/ not exported ({exc})")
        links.append((f"{run.agent} / {run.task} / seed {run.seed} / {run.budget_label} ({run.run_dir.name})",
                      f"runs/{name}"))
    sections = [
        ("Headline: clipped achievement (agents x tasks, mean over seeds)", HEADLINE_WHY, results["achievement"]),
        ("Groups over seeds: mean, SEM and 95% bootstrap CI",
         "grouped by " + ", ".join(options.group_by) + "; budgets are never averaged together", results["groups"]),
        ("Unclipped normalized score", "(s - floor) / (target - floor): regressions negative, overshoot above 1",
         results["unclipped"]),
        ("FML-bench normalized improvement", "max(0, sign (a - b) / |p_best - p_worst|), exactly as FML-bench",
         results["fml_ni"]),
        ("FARBench domain-balanced score", "100 x mean over domains of the mean achievement of the domain's tasks",
         results["domains"]),
        ("Raw scores", "baseline and best, validation and hidden test, mean over seeds", results["raw"]),
    ]
    if "paired" in results:
        sections.insert(2, ("Paired comparison", "mean difference over shared tasks and seeds, 95% bootstrap CI, "
                                                 "win rate (ties half)", results["paired"]))
    sections += [("Operators", "per operator: outcomes and rates", results["operators"]),
                 ("Debug chains and cost per improvement", "", results["debug_and_cost"]),
                 ("Per run", "every metric of every run (see docs/metrics.md)", results["runs"].drop(columns=["run"]))]
    html = report.comparison_html(f"researchbench scores: {options.results}", [], sections, plots, links)
    (options.out / "report.html").write_text(html)
