"""Score runs: `researchbench score results/` (= `python compute_agent_metrics.py results/`; or results/<agent>, one run dir, or a sweep's folder).

Writes CSV and markdown tables, plots and a static HTML report beside the results
(<results' parent>/metric_reports/<results' name>/ unless --out is given) and prints the headline
tables; it never writes inside a run directory. `--mlflow [URI]` also logs each run to MLflow.
`python compute_agent_metrics.py examples/recorded --leaderboard` writes docs/leaderboard.md from the recorded
strong-LLM runs instead. docs/metrics.md defines every number.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.inert_text import inert
from researchbench.benchmark.common.paths import REPO_ROOT
from researchbench.benchmark.scoring.keys import GROUP_KEYS
from researchbench.benchmark.scoring.ranges import MODES


LEADERBOARD = REPO_ROOT / "docs" / "leaderboard.md"


def _names(values: list[str] | None) -> list[str]:
    return [v for item in values or [] for v in item.split(",") if v]


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The scorer's command line; `prog` is how the user called it (its --help and usage say so)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a results directory (any level: all, one agent, one run) or a sweep's folder "
                             "(results/.multirun/<time>: the runs of that sweep)")
    parser.add_argument("--out", type=Path, help="where to write (default: metric_reports/<name> beside the results)")
    parser.add_argument("--agent", action="append", help="only these agents (repeat or comma-separate)")
    parser.add_argument("--task", action="append", help="only these tasks (repeat or comma-separate)")
    parser.add_argument("--suite", help="only the tasks of this suite (ml_tasks/suites.yaml), e.g. lite")
    parser.add_argument("--budget", help="only runs with this budget (a label such as 50exp/$10/24h, or a count)")
    parser.add_argument("--include-unfinished", action="store_true",
                        help="also score runs still running or interrupted (no hidden-test score yet); "
                             "runs aborted by an outage are never scored")
    parser.add_argument("--repeats-independent", action="store_true",
                        help="count runs that repeat a seed with the same settings as separate trials "
                             "(default: one trial, the latest)")
    parser.add_argument("--group-by", default=",".join(GROUP_KEYS),
                        help=f"group keys for the seeds table (default {','.join(GROUP_KEYS)})")
    parser.add_argument("--compare", nargs=2, metavar=("AGENT_A", "AGENT_B"),
                        help="paired comparison of two agents over the tasks and seeds both ran")
    parser.add_argument("--ranges", choices=MODES, default="manifest",
                        help="normalized-improvement ranges: manifest (our floor and best_possible) or fml "
                             "(FML-bench's RANGE_META, matched to our tasks by domain and metric)")
    parser.add_argument("--farbench-missing-zero", action="store_true",
                        help="FARBench's convention: a task an agent lacks counts 0 in its domain score "
                             "(default: the domain is shown as incomplete)")
    parser.add_argument("--embedding-model", help="a local GraphCodeBERT (or other RoBERTa) directory")
    parser.add_argument("--embedding-cache", type=Path, help="embedding cache (default ~/.cache/researchbench)")
    parser.add_argument("--no-embeddings", action="store_true", help="skip the exploration metrics")
    parser.add_argument("--device", default="auto", help="embedding device: auto, cpu, cuda, cuda:1, ...")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--no-html", action="store_true")
    parser.add_argument("--mlflow", nargs="?", const="", metavar="URI",
                        help="also log each run to MLflow: a tracking URI or a local folder (default: mlruns/ "
                             "in the output folder); re-exporting updates, never duplicates (the tracking extra: "
                             "pip install -c requirements/lock.txt -e '.[tracking]')")
    parser.add_argument("--leaderboard", nargs="?", const=LEADERBOARD, type=Path, metavar="FILE",
                        help="write the leaderboard of the recorded strong-LLM runs under RESULTS (e.g. "
                             f"examples/recorded) to FILE (default {LEADERBOARD.relative_to(REPO_ROOT)}) and stop")
    args = parser.parse_args(argv)
    if args.leaderboard is not None:
        return _leaderboard(args.results, args.leaderboard)
    if args.mlflow is not None:
        from researchbench.benchmark.scoring.mlflow_export import missing_mlflow

        if problem := missing_mlflow():
            print(f"error: {problem}", file=sys.stderr)
            return 2
    from researchbench.benchmark.scoring.pipeline import Options, score

    out = args.out or default_out(args.results)
    options = Options(results=args.results, out=out, agents=_names(args.agent), tasks=_names(args.task),
                      suite=args.suite, budget=args.budget, unfinished=args.include_unfinished,
                      repeats_independent=args.repeats_independent, group_by=_names([args.group_by]),
                      compare=tuple(args.compare) if args.compare else None, ranges=args.ranges,
                      farbench_missing_zero=args.farbench_missing_zero, embeddings=not args.no_embeddings,
                      embedding_model=args.embedding_model, embedding_cache=args.embedding_cache, device=args.device,
                      plots=not args.no_plots, html=not args.no_html, mlflow=args.mlflow)
    try:
        results = score(options, lambda line: print(inert(line), file=sys.stderr))
    except UserError as exc:
        print(f"error: {inert(exc)}", file=sys.stderr)
        return 2
    _print(results)
    _out(f"\nwrote {out}/ ({', '.join(results['written']['file'])})")
    return 0


def _leaderboard(recordings: Path, page: Path) -> int:
    """Generate the leaderboard page from the recordings (benchmark/scoring/leaderboard.py)."""
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.records.summary import SummaryError
    from researchbench.benchmark.scoring.leaderboard import entries, markdown
    from researchbench.benchmark.tasks.manifest import load_task

    if not recordings.is_dir():
        print(f"error: {recordings} is not a folder of recorded runs (e.g. examples/recorded)", file=sys.stderr)
        return 2
    tasks = get_registry().tasks
    try:
        rows = entries(recordings, tasks)
    except SummaryError as exc:  # a recording the page would misreport: named, in one line
        print(f"error: {inert(exc)}", file=sys.stderr)
        return 2
    if not rows:
        print(f"error: no finished recorded run under {recordings} (a folder with a summary.json)", file=sys.stderr)
        return 2
    versions = {name: load_task(tasks[name]).version for name in {r.task for r in rows}}
    shown = recordings.resolve().relative_to(REPO_ROOT) if recordings.resolve().is_relative_to(REPO_ROOT) else recordings
    page.write_text(markdown(rows, versions, f"python compute_agent_metrics.py {shown} --leaderboard"))
    _out(f"wrote {page} ({len(rows)} recorded runs, {len(versions)} tasks)")
    return 0


def default_out(results: Path) -> Path:
    """Beside the results, never in the current directory nor inside a run: results/aide ->
    results/metric_reports/aide; results/ -> metric_reports/results; a sweep's folder
    results/.multirun/<time> -> results/metric_reports/sweep_<time>."""
    results = results.resolve()
    if results.parent.name == ".multirun":
        return results.parent.parent / "metric_reports" / f"sweep_{results.name}"
    return results.parent / "metric_reports" / results.name


def _print(results: dict) -> None:
    import pandas as pd

    from researchbench.benchmark.scoring.normalize import HEADLINE_FORMAT, HEADLINE_WHY

    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_colwidth", 80,
                           "display.float_format", HEADLINE_FORMAT.format):
        not_scored = results["not_scored"]
        if len(not_scored):
            _out(f"Not scored ({len(not_scored)} runs, left out of every table and aggregate)")
            _out(not_scored.to_string(index=False))
            _out()
        _out(f"Headline: clipped achievement per task ({HEADLINE_WHY})")
        _out(results["achievement"].to_string())
        _out(f"\nRaw scores ({len(results['runs'])} runs; test = hidden test set, mean over n trials)")
        _out(results["raw"].to_string(index=False))
        _out("\nGroups over seeds (n trials; mean, SEM, 95% bootstrap CI of the achievement)")
        cols = ["agent", "task", "version", "budget", "llm", "config", "n", "achievement", "achievement_sem",
                "achievement_ci_low", "achievement_ci_high"]
        _out(results["groups"][[c for c in cols if c in results["groups"]]].to_string(index=False))
        if "paired" in results:
            _out("\nPaired comparison (n pairs; seeds per task a paired t-test needs for 80% power)")
            cols = ["first", "second", "budget", "scope", "n", "mean_diff", "ci_low", "ci_high", "win_rate",
                    "seeds_needed_80", "power"]
            _out(results["paired"][cols].to_string(index=False))
        for note in results["notes"]["note"]:
            _out(f"note: {note}")


def _out(text: str = "") -> None:
    """A line of the tables on stdout; run names and agent text in them are made inert first."""
    print(inert(text))
