"""The benchmark's own leaderboard: recorded strong-LLM runs, agents x tasks, generated, never typed.

A recording is a folder with a run's `summary.json` (and, where kept, its `journal.jsonl.gz`): the
examples/recorded tree. Each is scored on its task's current manifest; a run made on another version of
the task than today's is listed apart, since its data (and so its score) belongs to that version.
`python compute_agent_metrics.py examples/recorded --leaderboard` writes the page (docs/leaderboard.md).
"""

from __future__ import annotations

import math
import posixpath
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from researchbench.benchmark.records.journal import BASELINE_ID
from researchbench.benchmark.records.summary import SUMMARY_FILE, RunSummary, read_summary
from researchbench.benchmark.scoring.normalize import achievement, unclipped
from researchbench.benchmark.scoring.process import efficiency, generalization, reliability
from researchbench.benchmark.scoring.ranges import manifest_range
from researchbench.benchmark.scoring.runs import MetricInfo, RunRecord, record_of

TO_GAIN = 0.9  # "experiments to reach 90% of the run's final gain" (on validation, what the agent saw)


@dataclass(frozen=True)
class Entry:
    task: str
    ran_on: str  # the task version the run was made on
    agent: str
    seed: int
    test: float
    achievement: float  # clipped, on today's scale
    unclipped: float
    gap_closed: float  # of the baseline->1.0 gap
    to_gain: Optional[int]  # experiments until the best val reached 90% of the final val gain; None: unknown
    experiments: int
    statuses: dict[str, int]
    calls: int
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    where: str  # the recording's folder, relative to the root
    # process metrics (benchmark/scoring/process.py, on the manifest's range; NaN without a journal): the
    # improvement curve's area over the budget, the val-test gap of normalized improvement, valid step ratio
    auc: float = float("nan")
    val_test_gap: float = float("nan")
    valid_steps: float = float("nan")


def _val_trajectory(run: RunRecord) -> list[tuple[int, float]]:
    """(experiments spent, val score) of every finished node with a score, in the order they finished."""
    spent, trajectory = 0, []
    for node in run.nodes:
        spent += node.executed and node.id != BASELINE_ID
        if node.primary is not None:
            trajectory.append((spent, float(node.primary)))
    return trajectory


def experiments_to_gain(trajectory: list[tuple[int, float]], higher: bool, share: float = TO_GAIN) -> Optional[int]:
    """The experiments spent when the best val first reached `share` of the run's final gain over the
    baseline (the first score); 0 when there was no gain; None without a trajectory."""
    if not trajectory:
        return None
    sign = 1.0 if higher else -1.0
    base = trajectory[0][1]
    best = max(sign * v for _, v in trajectory)
    gain = best - sign * base
    if gain <= 0:
        return 0
    running = sign * base
    for spent, value in trajectory:
        running = max(running, sign * value)
        if running - sign * base >= share * gain:
            return spent
    return None


def entry(folder: Path, root: Path, spec: Any, summary: RunSummary | None = None) -> Entry:
    """One recording's row; `summary` when the caller has read it already (the viewer, through its own
    confinement), else read here."""
    summary = summary if summary is not None else read_summary(folder)
    m = spec.metric
    metric = MetricInfo(m.name, m.direction, m.floor, m.target, m.best_possible)
    base, best = summary.baseline.test, summary.best.test
    a0, a1 = achievement(metric, base), achievement(metric, best)
    llm = summary.llm
    run, rng = record_of(folder, summary), manifest_range(metric)
    return Entry(
        task=spec.name, ran_on=str(summary.task_version), agent=summary.agent, seed=summary.seed,
        test=best, achievement=a1, unclipped=unclipped(metric, best),
        gap_closed=(a1 - a0) / (1 - a0) if a0 < 1 else float("nan"),
        to_gain=experiments_to_gain(_val_trajectory(run), m.higher_is_better) if run.nodes else None,
        experiments=summary.steps.experiments, statuses=dict(summary.steps.by_status),
        calls=int(llm.get("calls", 0)), prompt_tokens=int(llm.get("prompt_tokens", 0)),
        completion_tokens=int(llm.get("completion_tokens", 0)), wall_s=summary.wall_seconds or 0.0,
        where=folder.relative_to(root).as_posix(), auc=efficiency(run, rng)["auc_budget"],
        val_test_gap=generalization(run, rng), valid_steps=reliability(run)["valid_step_ratio"])


def entries(root: Path, tasks: dict[str, Path]) -> list[Entry]:
    """Every finished recording under `root` of a registered task."""
    from researchbench.benchmark.tasks.manifest import load_task

    found = []
    for path in sorted(root.rglob(SUMMARY_FILE)):
        summary = read_summary(path.parent)
        if summary.status == "finished" and summary.task in tasks:
            found.append(entry(path.parent, root, load_task(tasks[summary.task]), summary))
    return found


def _averaged(name: str) -> Any:
    """A Standing's figure: the mean of its runs' `name` (with one run, that run's)."""
    return property(lambda self: statistics.fmean(getattr(r, name) for r in self.runs))


@dataclass(frozen=True)
class Standing:
    """One agent on one task version: its recorded runs (one per seed) read together. With one run every
    figure is that run's; with several, the means (achievement's spread beside it), the median experiments to
    90%, and the steps summed over the runs."""

    agent: str
    runs: tuple[Entry, ...]

    test = _averaged("test")
    achievement = _averaged("achievement")
    unclipped = _averaged("unclipped")
    gap_closed = _averaged("gap_closed")
    auc = _averaged("auc")
    val_test_gap = _averaged("val_test_gap")
    valid_steps = _averaged("valid_steps")
    calls = _averaged("calls")
    prompt_tokens = _averaged("prompt_tokens")
    completion_tokens = _averaged("completion_tokens")
    wall_s = _averaged("wall_s")

    @property
    def n(self) -> int:
        return len(self.runs)

    @property
    def achievement_sd(self) -> float:
        """The sample standard deviation over the seeds (0 for one run)."""
        return statistics.stdev(r.achievement for r in self.runs) if self.n > 1 else 0.0

    @property
    def to_gain(self) -> Optional[int]:
        known = [r.to_gain for r in self.runs if r.to_gain is not None]
        return statistics.median_low(known) if known else None

    @property
    def statuses(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for r in self.runs:
            for status, count in r.statuses.items():
                total[status] = total.get(status, 0) + count
        return total

    @property
    def where(self) -> str:
        """The recording's folder; for several seeds, the folder that holds them all and the seeds."""
        if self.n == 1:
            return self.runs[0].where
        common = posixpath.commonpath([r.where for r in self.runs]) or "."
        return f"{common} (seeds {', '.join(str(r.seed) for r in self.runs)})"


def standings(rows: list[Entry], versions: dict[str, str]) -> tuple[list[tuple[str, list[Standing]]], list[Entry]]:
    """Per task on its current version, the agents' standings, best mean achievement first; and the runs made
    on another version of their task (not ranked: their data differ from today's)."""
    current = [r for r in rows if r.ran_on == versions[r.task]]
    ranked = []
    for task in sorted({r.task for r in current}):
        agents = sorted({r.agent for r in current if r.task == task})
        board = [Standing(agent, tuple(sorted((r for r in current if r.task == task and r.agent == agent),
                                              key=lambda r: (r.seed, r.where)))) for agent in agents]
        ranked.append((task, sorted(board, key=lambda s: (-s.achievement, s.agent))))
    stale = sorted((r for r in rows if r.ran_on != versions[r.task]), key=lambda r: (r.task, r.agent, r.where))
    return ranked, stale


def achievement_cell(s: Standing) -> str:
    """"0.52 (0.52)" for one run; "0.36 ± 0.03 (0.36)" over several seeds."""
    spread = f" ± {s.achievement_sd:.2f}" if s.n > 1 else ""
    return f"{s.achievement:.2f}{spread} ({s.unclipped:.2f})"


def process_cell(s: Standing) -> str:
    """"AUC / val-test gap / valid steps", each to two places ('-' where a recording kept no journal)."""
    return " / ".join("-" if math.isnan(v) else f"{v:.2f}" for v in (s.auc, s.val_test_gap, s.valid_steps))


def _tokens(n: float) -> str:
    return f"{n / 1000:.0f}k"


def markdown(rows: list[Entry], versions: dict[str, str], command: str) -> str:
    """The page: a table per task on its current version (best mean achievement first), then the stale runs."""
    lines = ["# Leaderboard: agents driven by a strong LLM", "",
             f"Generated by `{command}` from the recorded runs (each folder's README says who answered and how);",
             "do not edit by hand. Hidden-test scores, each run on its task's current scale: achievement clipped to",
             "0..1 (unclipped beside it), the share of the baseline->1.0 gap closed, the experiments until the best",
             "validation score reached 90% of the run's final gain, three process metrics (docs/metrics.md: the",
             "improvement curve's area over the budget, the val-test gap of normalized improvement, the share of",
             "experiments that scored), the steps by status, LLM calls and tokens (the relay's estimate,",
             "characters / 4) and wall time (the answering model's thinking included).",
             "n is the number of seeds: one per LLM run (read those rows as what a strong LLM does with each",
             "scaffold, not as a ranking with error bars); where n > 1 a row gives the means over the seeds",
             "(achievement ± its standard deviation), the median experiments to 90% and the steps of all runs.", ""]
    ranked, stale = standings(rows, versions)
    for task, board in ranked:
        lines += [f"## {task} ({versions[task]})", "",
                  "| agent | n | hidden test | achievement (unclipped) | gap closed | experiments to 90% | "
                  "AUC / val-test gap / valid | steps | LLM calls | tokens in / out | wall | recording |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for s in board:
            steps = ", ".join(f"{k} {v}" for k, v in sorted(s.statuses.items()))
            to_gain = "-" if s.to_gain is None else str(s.to_gain)
            lines.append(f"| {s.agent} | {s.n} | {s.test:.4g} | {achievement_cell(s)} | "
                         f"{s.gap_closed:.2f} | {to_gain} | {process_cell(s)} | {steps} | {s.calls:.0f} | "
                         f"{_tokens(s.prompt_tokens)} / "
                         f"{_tokens(s.completion_tokens)} | {s.wall_s:.0f} s | {s.where} |")
        lines.append("")
    if stale:
        lines += ["## Recorded on an earlier version of the task", "",
                  "Their data differ from today's, so they are not ranked; re-record them on the current version.", "",
                  "| task | ran on | now | agent | recording |", "|---|---|---|---|---|"]
        lines += [f"| {r.task} | {r.ran_on} | {versions[r.task]} | {r.agent} | {r.where} |" for r in stale]
        lines.append("")
    return "\n".join(lines)
