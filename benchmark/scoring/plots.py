"""matplotlib figures as PNG bytes: best-so-far against experiments and against dollars, per task, and a
performance profile across tasks. matplotlib is imported here only (Agg backend, no display)."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd

from benchmark.scoring.normalize import achievement
from benchmark.scoring.runs import RunRecord, is_ok


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def best_so_far(run: RunRecord) -> tuple[list[float], list[float], list[float]]:
    """(experiment index, cumulative USD, clipped achievement of the best val so far) after each experiment."""
    best, usd, xs, dollars, ys = run.score("baseline", "val"), 0.0, [], [], []
    count = 0
    for node in run.nodes:
        usd += sum(float(c.get("usd") or 0.0) for c in node.llm_calls if isinstance(c, dict))
        if not node.executed or node.id == "0000":
            continue
        count += 1
        if is_ok(node) and (best is None or run.metric.better(node.primary, best)):
            best = node.primary
        xs.append(count)
        dollars.append(usd)
        ys.append(achievement(run.metric, best))
    return xs, dollars, ys


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    _pyplot().close(fig)
    return buf.getvalue()


def curves(runs: list[RunRecord], variant_of: dict[str, str]) -> list[tuple[str, bytes]]:
    """Per task, two panels: best-so-far (clipped achievement on val) vs experiments and vs USD; one line
    per run, coloured by agent variant."""
    plt = _pyplot()
    out = []
    tasks = sorted({r.task for r in runs})
    variants = sorted(set(variant_of.values()))
    colours = {v: plt.get_cmap("tab10")(i % 10) for i, v in enumerate(variants)}
    for task in tasks:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.4))
        seen = set()
        for run in (r for r in runs if r.task == task):
            xs, dollars, ys = best_so_far(run)
            variant = variant_of[str(run.run_dir)]
            label = None if variant in seen else variant
            seen.add(variant)
            ax1.step(xs, ys, where="post", color=colours[variant], label=label, alpha=0.8)
            ax2.step(dollars, ys, where="post", color=colours[variant], alpha=0.8)
        ax1.set(xlabel="experiments", ylabel="best achievement (val)", title=f"{task}: vs experiments", ylim=(-0.02, 1.02))
        ax2.set(xlabel="LLM spend (USD)", title=f"{task}: vs $", ylim=(-0.02, 1.02))
        ax1.legend(fontsize=7, loc="lower right")
        out.append((f"best so far: {task}", _png(fig)))
    return out


def performance_profile(df: pd.DataFrame, column: str = "achievement") -> tuple[str, bytes]:
    """For each agent variant, the fraction of tasks whose mean score over seeds is at least tau."""
    plt = _pyplot()
    means = df.groupby(["variant", "task_id"])[column].mean().unstack("task_id")
    taus = np.linspace(0, 1, 101)
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for variant, row in means.iterrows():
        values = row.to_numpy(dtype=float)
        values = np.where(np.isnan(values), -math.inf, values)  # a missing task never reaches any tau
        ax.plot(taus, [(values >= t).mean() for t in taus], label=str(variant))
    ax.set(xlabel="achievement threshold τ", ylabel="fraction of tasks ≥ τ", title="performance profile",
           ylim=(-0.02, 1.02))
    ax.legend(fontsize=7)
    return "performance profile", _png(fig)
