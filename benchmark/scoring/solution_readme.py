"""best_solution/README.md: what a person needs beside the best node's files: what the solution changed
versus the task's baseline (the diff and a one-line summary), its val and test scores next to the
baseline's, what the agent said it did, and the commands that re-run it. The plan is agent text: shown
inert and fenced, never as markdown of its own."""

from __future__ import annotations

import re
import shlex

from researchbench.benchmark.common.inert_text import inert
from researchbench.benchmark.common.paths import REPO_ROOT
from researchbench.benchmark.edits import unified_diff
from researchbench.benchmark.scoring.runs import RunRecord
from researchbench.benchmark.tasks.manifest import TaskSpec, render
from researchbench.benchmark.tasks.workspace import workspace_root

README = "README.md"
MAX_DIFF_CHARS = 40_000  # a README is read by a person; the full diff stays in the run's blobs


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _fence(text: str, lang: str = "") -> str:
    """A fenced block the text itself cannot close: a longer fence than any run of backticks in it."""
    ticks = "`" * max(3, max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def _diff_summary(before: dict[str, str], after: dict[str, str], diff: str) -> str:
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    added = sum(1 for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff.splitlines() if line.startswith("-") and not line.startswith("---"))
    if not changed:
        return "No file differs from the baseline: the baseline itself scored best."
    return inert(f"{len(changed)} file(s) changed ({', '.join(changed)}), +{added} -{removed} lines.", multiline=False)


def _rerun(run: RunRecord, spec: TaskSpec | None) -> list[str]:
    lines = ["These are the task's editable files; every other file (its driver, ...) is the harness's own.",
             "Lay them over a copy of the baseline code, run the validation phase and score it as the harness",
             "does (outside the sandbox; the task must be prepared: `python setup.py --task " + run.task + "`):", ""]
    if spec is None:
        return lines + [f"(task `{run.task}` is not registered here; its task.yaml names the phase commands)"]
    root = workspace_root() / run.task
    phase = render(spec.phases["val"], python="python", code=".", data=str(root / spec.data.public),
                   output="out", phase="val", seed=str(run.seed))
    evaluate = render(spec.evaluator, python="python", task_dir=str(spec.task_dir), output="work/out",
                      labels=str(root / spec.data.labels), metrics="work/out/metrics.json", phase="val")
    script = "\n".join([
        f"export PYTHONPATH={shlex.quote(str(REPO_ROOT))}  # the harness's task_runtime, as jobs see it",
        f"rm -rf work && cp -r {shlex.quote(str(spec.code_dir))} work",
        *([f"cp -r {shlex.quote(str(spec.code_overlay))}/. work/  # this scale's own baseline files"]
          if spec.code_overlay else []),
        f"cp -r {shlex.quote(str(run.run_dir / 'best_solution'))}/. work/ && rm work/{README} && mkdir work/out",
        f"(cd work && {shlex.join(phase)})",
        shlex.join(evaluate) + "  # writes work/out/metrics.json: {\"metrics\": {...}}",
    ])
    return lines + [_fence(script, "bash"), "",
                    "Running the same run command again resumes this finished run as a no-op and reprints its "
                    "summary; its resolved settings are in config.yaml beside best_solution/."]


def solution_readme(run: RunRecord, spec: TaskSpec | None) -> str:
    """The README text for ``run``'s best node (the caller has checked there is one)."""
    best, baseline = run.best, run.baseline
    assert best is not None
    before = run.files(baseline) if baseline is not None else {}
    after = run.files(best)
    diff = unified_diff(before, after)
    metric = run.summary.metric
    arrow = "lower is better" if metric.direction == "lower" else "higher is better"
    shown = diff if len(diff) <= MAX_DIFF_CHARS else diff[:MAX_DIFF_CHARS] + \
        f"\n... ({len(diff) - MAX_DIFF_CHARS} more characters: the node's diff blob in the run directory)\n"
    parts = [
        f"# Best solution: {run.agent} on {run.task} (seed {run.seed})",
        "",
        f"Node {best.id} ({best.operator}, step {best.step}) of run `{run.run_dir.name}`, chosen by its "
        f"validation score. Metric: {metric.name} ({arrow}).",
        "",
        "| | val | test (hidden, scored once at the end) |",
        "|---|---|---|",
        f"| baseline | {_score(run.score('baseline', 'val'))} | {_score(run.score('baseline', 'test'))} |",
        f"| this solution | {_score(run.score('best', 'val'))} | {_score(run.score('best', 'test'))} |",
        "",
        "## What changed versus the baseline",
        "",
        _diff_summary(before, after, diff),
    ]
    if diff:
        parts += ["", _fence(inert(shown), "diff")]
    if best.plan.strip():
        parts += ["", "## What the agent said it did (its own words, unverified)", "", _fence(inert(best.plan))]
    parts += ["", "## How to re-run it", "", *_rerun(run, spec)]
    return "\n".join(parts) + "\n"
