"""matplotlib figures: best-so-far against experiments and against dollars, per task, and a performance
profile across tasks (PNG bytes); one run's best-so-far curve with its axes as inline SVG for its page.
matplotlib is imported here only (Agg backend, no display)."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd

from researchbench.benchmark.scoring.normalize import achievement
from researchbench.benchmark.records.journal import BASELINE_ID
from researchbench.benchmark.scoring.runs import RunRecord, is_ok


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
        if not node.executed or node.id == BASELINE_ID:
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


def profile_fractions(df: pd.DataFrame, taus: np.ndarray,
                      column: str = "achievement") -> dict[str, tuple[list[float], int, int]]:
    """variant -> (fraction of its tasks whose mean score over seeds is at least each tau, tasks it ran,
    tasks any variant ran). A task a variant never ran is left out of its fraction, not counted as a
    failure: a missing run says nothing about how the agent does there (the legend says k of n tasks)."""
    means = df.groupby(["variant", "task_id"])[column].mean().unstack("task_id")
    out = {}
    for variant, row in means.iterrows():
        values = row.to_numpy(dtype=float)
        ran = values[~np.isnan(values)]
        fractions = [float((ran >= t).mean()) if len(ran) else math.nan for t in taus]
        out[str(variant)] = (fractions, len(ran), len(values))
    return out


def performance_profile(df: pd.DataFrame, column: str = "achievement") -> tuple[str, bytes]:
    """For each agent variant, the fraction of the tasks it ran whose mean score over seeds is at least tau."""
    plt = _pyplot()
    taus = np.linspace(0, 1, 101)
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for variant, (fractions, ran, total) in profile_fractions(df, taus, column).items():
        ax.plot(taus, fractions, label=variant if ran == total else f"{variant} ({ran} of {total} tasks)")
    ax.set(xlabel="achievement threshold τ", ylabel="fraction of its tasks ≥ τ", title="performance profile",
           ylim=(-0.02, 1.02))
    ax.legend(fontsize=7)
    return "performance profile", _png(fig)


def run_curve_svg(run: RunRecord) -> str:
    """One run's best val score so far after each experiment (0 = the baseline), with labelled axes and the
    baseline and target as reference lines, as an inline `<svg>` element. Text is drawn as paths (no
    `<text>` from agent or manifest strings reaches the page) and the ids are fixed, so the output is
    the same bytes for the same run."""
    plt = _pyplot()
    import matplotlib

    best = run.score("baseline", "val")
    points = [best]
    for node in run.experiments:
        if is_ok(node) and (best is None or run.metric.better(node.primary, best)):
            best = node.primary
        points.append(best)
    xs = [i for i, p in enumerate(points) if p is not None and math.isfinite(p)]
    if not xs:
        return "<p class='note'>(no scored experiment)</p>"
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "researchbench"}):
        fig, ax = plt.subplots(figsize=(5.6, 2.6))
        ax.step(xs, [points[i] for i in xs], where="post", color="#0b6bcb", marker="o", markersize=3)
        baseline = run.score("baseline", "val")
        if baseline is not None and math.isfinite(baseline):
            ax.axhline(baseline, color="#888", linestyle=":", linewidth=1, label="baseline (val)")
        ax.axhline(run.metric.target, color="#116329", linestyle="--", linewidth=1, label="target")
        ax.set(xlabel="experiments (0 = baseline)", ylabel=f"best val {run.metric.name}"[:40])
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
        plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]
