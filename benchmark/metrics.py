"""Scoring across runs: the raw table (baseline vs agent, val and hidden test) and normalized scores.

Reads only summary.json files, so it scores any subset of tasks and agents. Normalized score =
(score - floor) / (target - floor) with floor and target from the task manifest as recorded in the
run: 0 is a trivial predictor, 1 the task's target, and below 0 a regression (never clamped, so
breaking things costs). Process-level metrics will join this module; they read the journal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from benchmark.errors import UserError

SKIP_DIRS = {".multirun", "llm_cache", "blobs", "scratch"}


def find_runs(root: Path) -> list[Path]:
    """Every run directory (one holding summary.json) under root, in a stable order."""
    root = Path(root)
    if not root.exists():
        raise UserError(f"{root} does not exist; pass a results directory such as results/ or results/optuna")
    runs = sorted(p.parent for p in root.rglob("summary.json") if not SKIP_DIRS & set(p.relative_to(root).parts))
    if not runs:
        raise UserError(f"no runs under {root} (no summary.json found); run run_agent_benchmark.py first")
    return runs


def _normalized(metric: dict[str, Any], score: float | None) -> float | None:
    if score is None:
        return None
    return (score - metric["floor"]) / (metric["target"] - metric["floor"])


def load_runs(root: Path) -> pd.DataFrame:
    """One row per run."""
    rows = []
    for run_dir in find_runs(root):
        try:
            s = json.loads((run_dir / "summary.json").read_text())
            metric = s["metric"]
            rows.append({
                "agent": s["agent"], "task": s["task"], "task_version": s["task_version"], "seed": s["seed"],
                "run": run_dir.name, "status": s["status"], "metric": metric["name"],
                "direction": metric["direction"],
                "baseline_val": s["baseline"]["val"], "baseline_test": s["baseline"]["test"],
                "best_val": s["best"]["val"], "best_test": s["best"]["test"],
                "baseline_norm": _normalized(metric, s["baseline"]["test"]),
                "agent_norm": _normalized(metric, s["best"]["test"]),
                "experiments": s["steps"]["experiments"], "usd": s["budget"]["used"]["usd"],
                "wall_s": s["wall_seconds"],
            })
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"{run_dir / 'summary.json'} is not a researchbench summary ({exc}); "
                            f"remove it or re-run that run") from None
    return pd.DataFrame(rows)


def raw_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per agent and task: baseline and best scores on val and hidden test, mean over runs (seeds)."""
    cols = ["baseline_val", "best_val", "baseline_test", "best_test"]
    grouped = runs.groupby(["task", "metric", "direction", "agent"], sort=True)
    table = grouped[cols].mean()
    table["n_runs"] = grouped.size()
    table["best_test_std"] = grouped["best_test"].std(ddof=1)
    return table.reset_index()


def normalized_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Agents x tasks of mean normalized hidden-test score, with a MEAN column over tasks."""
    table = runs.pivot_table(index="agent", columns="task", values="agent_norm", aggfunc="mean")
    table["MEAN"] = table.mean(axis=1)
    baseline = runs.pivot_table(index="task", values="baseline_norm", aggfunc="mean")["baseline_norm"]
    table.loc["(baseline)"] = [*baseline.reindex(table.columns[:-1]).tolist(), baseline.mean()]
    return table
