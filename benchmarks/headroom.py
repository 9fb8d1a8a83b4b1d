"""Headroom: how much of a task's baseline->target gap a hyper-parameter tuner closes.

    python benchmarks/headroom.py --suite lite | --all | --task causality [--task ...]
                                  [--seeds 0 1 2] [--factor 3] [--jobs 1] [--results-dir results/headroom]

For each task, runs `agent=optuna` (TPE over every knob the manifest declares) at `--factor` times the
task's default budget (experiments and compute hours) once per seed, through the real CLI, and prints:
the baseline's hidden-test achievement, Optuna's, and the share of the baseline->target gap Optuna
closed. Achievement is FARBench's clipped score, clip((s - floor) / (target - floor), 0, 1); the gap
closed by one seed's run is (ach(best) - ach(baseline)) / (1 - ach(baseline)), read from the run's own
summary.json. The headroom rule (docs/tasks.md) asks, per task: median gap closed <= 0.5 and baseline
achievement <= 0.6 (unless the manifest's rationale argues otherwise). Exit 1 when a task misses it.

Runs are ordinary run directories: re-running resumes them (finished runs are no-ops), so an
interrupted measurement continues where it stopped.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MAX_GAP_CLOSED = 0.5  # a tuner may close at most half of the baseline->target gap (median over seeds)
MAX_BASELINE_ACHIEVEMENT = 0.6  # the baseline must leave real room


@dataclass
class Trial:
    task: str
    seed: int
    baseline: float | None = None  # achievement of the baseline's hidden-test score
    best: float | None = None  # achievement of Optuna's best-val node on the hidden test
    error: str = ""

    @property
    def gap_closed(self) -> float:
        if self.baseline is None or self.best is None or self.baseline >= 1.0:
            return math.nan
        return (self.best - self.baseline) / (1.0 - self.baseline)


def achievement(score: float | None, floor: float, target: float) -> float | None:
    if score is None:
        return None
    return min(1.0, max(0.0, (score - floor) / (target - floor)))


def run_trial(task: str, seed: int, factor: float, results_dir: Path) -> Trial:
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.tasks.manifest import load_task

    spec = load_task(get_registry().tasks[task])
    budget = spec.budget
    argv = [sys.executable, str(REPO / "run_agent_benchmark.py"), "agent=optuna", f"task={task}", f"seed={seed}",
            f"budget.steps={int(round(budget.steps * factor))}",
            f"budget.compute_hours={budget.compute_hours * factor:g}",
            f"results_dir={results_dir}", "quiet=true"]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    trial = Trial(task, seed)
    summaries = sorted((results_dir / "optuna" / task).glob(f"seed{seed}-*/summary.json"),
                       key=lambda p: p.stat().st_mtime)
    if proc.returncode != 0 or not summaries:
        last = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["no output"]
        trial.error = f"exit {proc.returncode}: {last[0][:200]}"
        return trial
    from researchbench.benchmark.records.summary import SummaryError, read_summary

    try:
        summary = read_summary(summaries[-1].parent)
    except SummaryError as exc:
        trial.error = str(exc)
        return trial
    if summary.status != "finished":
        trial.error = f"run status {summary.status!r}"
        return trial
    metric = summary.metric
    trial.baseline = achievement(summary.baseline.test, metric.floor, metric.target)
    trial.best = achievement(summary.best.test, metric.floor, metric.target)
    return trial


def _fmt(value: float | None) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.2f}"


def report(tasks: list[str], trials: list[Trial]) -> tuple[list[str], bool]:
    """The table's lines, and whether every task meets the headroom rule."""
    lines = ["| task | baseline | Optuna | gap closed (median) | per seed | rule |",
             "|---|---|---|---|---|---|"]
    all_ok = True
    for task in tasks:
        mine = [t for t in trials if t.task == task]
        done = [t for t in mine if not t.error]
        if not done:
            all_ok = False
            lines.append(f"| {task} | - | - | - | {'; '.join(t.error for t in mine)} | not measured |")
            continue
        base = statistics.fmean(t.baseline for t in done if t.baseline is not None) if any(
            t.baseline is not None for t in done) else None
        best = statistics.fmean(t.best for t in done if t.best is not None) if any(
            t.best is not None for t in done) else None
        gaps = [t.gap_closed for t in done if not math.isnan(t.gap_closed)]
        gap = statistics.median(gaps) if gaps else math.nan
        problems = [f"seed {t.seed}: {t.error}" for t in mine if t.error]
        if math.isnan(gap):
            problems.append("gap undefined (the baseline already at the target)")
        elif gap > MAX_GAP_CLOSED:
            problems.append(f"gap closed {gap:.2f} > {MAX_GAP_CLOSED}")
        if base is None or base > MAX_BASELINE_ACHIEVEMENT:
            problems.append(f"baseline {_fmt(base)} > {MAX_BASELINE_ACHIEVEMENT}")
        ok = not problems
        all_ok &= ok
        per_seed = ", ".join(f"s{t.seed} {_fmt(t.baseline)}->{_fmt(t.best)}" for t in done)
        lines.append(f"| {task} | {_fmt(base)} | {_fmt(best)} | {_fmt(gap)} | {per_seed} | "
                     f"{'meets' if ok else 'MISSES: ' + '; '.join(problems)} |")
    return lines, all_ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--task", action="append", help="a task (repeatable)")
    which.add_argument("--suite", help="a suite of ml_tasks/suites.yaml, e.g. lite")
    which.add_argument("--all", action="store_true", help="every registered task")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--factor", type=float, default=3.0, help="times the task's default budget (default 3)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (each takes the task's cpus)")
    parser.add_argument("--results-dir", type=Path, default=REPO / "results" / "headroom")
    parser.add_argument("--json", type=Path, help="also write every trial to this JSON file")
    args = parser.parse_args(argv)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

    from researchbench.benchmark.common.errors import UserError
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.tasks.suites import suite_tasks

    try:
        known = get_registry().tasks
        tasks = args.task or (suite_tasks(args.suite) if args.suite else sorted(known))
        unknown = [t for t in tasks if t not in known]
        if unknown:
            raise UserError(f"unknown task {unknown[0]!r}; known: {', '.join(sorted(known))}")
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    results_dir = args.results_dir.resolve()
    work = [(task, seed) for task in tasks for seed in args.seeds]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_trial, task, seed, args.factor, results_dir) for task, seed in work]
        trials = []
        for future in futures:
            trial = future.result()
            trials.append(trial)
            print(f"{trial.task} seed {trial.seed}: baseline {_fmt(trial.baseline)} -> optuna {_fmt(trial.best)}"
                  f" (gap closed {_fmt(trial.gap_closed)}){' ' + trial.error if trial.error else ''}", flush=True)
    lines, ok = report(tasks, trials)
    print(f"\nOptuna at {args.factor:g}x each task's default budget, seeds {args.seeds}; hidden-test achievement "
          "clip((s - floor) / (target - floor), 0, 1):")
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps([t.__dict__ | {"gap_closed": t.gap_closed} for t in trials], indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
