"""Three normalized scores of one hidden-test result, each named, with the headline chosen here.

- `fml_ni`: FML-bench's normalized improvement formula (its compute_agent_metrics.py:238-258):
  `max(0, sign * (a - b) / |p_best - p_worst|)`, a = agent, b = baseline, p_worst possibly the
  baseline itself. The range comes from `ranges` (our manifests, or FML-bench's own table). Falls
  back to the baseline (NI 0) without an agent score.
- `achievement`: FARBench's clipped achievement `clip((s - floor) / (target - floor), 0, 1)`.
- `unclipped`: `(s - floor) / (target - floor)`, the same scale without the clip: regressions below
  the floor are negative and a result past the target is above 1.

HEADLINE is the clipped achievement: its mean over tasks cannot be dominated by one task where a
strong agent overshoots the target (an LLM reached 1.12 on causality) or one that collapses far
below the floor, and it matches FARBench's task score, so numbers compare across the two. Every place
that shows a run's result prints it the same way (`headline_text`): the run's summary lines, the sweep
table and the scorer's tables; the unclipped score is only ever shown beside it, labelled.
"""

from __future__ import annotations

import math

from researchbench.benchmark.scoring.ranges import NIRange
from researchbench.benchmark.scoring.runs import MetricInfo

HEADLINE = "achievement"
HEADLINE_WHY = ("headline = FARBench's clipped achievement clip((s-floor)/(target-floor), 0, 1): bounded per task, "
                "so one task where an agent overshoots the target (1.12 on causality) or collapses cannot dominate "
                "the mean; the unclipped score and FML-bench's normalized improvement are reported beside it")
HEADLINE_FORMAT = "{:.4f}"  # the run's summary lines, the sweep table and the scorer's tables print it so
NAN = float("nan")


def fml_ni(rng: NIRange | None, agent: float | None, baseline: float | None) -> float:
    """FML-bench's normalized improvement; NaN without a range or a baseline, 0 when the agent has no score."""
    if rng is None or baseline is None:
        return NAN
    a, b = rng.shown(baseline if agent is None else agent), rng.shown(baseline)  # no agent score: the baseline's
    if a is None or b is None or rng.span(b) == 0:
        return NAN
    signed = (a - b) if rng.direction == "higher" else (b - a)
    return max(signed / rng.span(b), 0.0)


def unclipped(metric: MetricInfo, score: float | None) -> float:
    """0 at the floor, 1 at the target, below 0 a regression past a trivial predictor; NaN without a score."""
    if score is None or not math.isfinite(score):
        return NAN
    return (score - metric.floor) / (metric.target - metric.floor)


def achievement(metric: MetricInfo, score: float | None) -> float:
    """FARBench's clipped achievement in [0, 1]; an unscored run is 0 (as FARBench scores it)."""
    value = unclipped(metric, score)
    return 0.0 if math.isnan(value) else min(max(value, 0.0), 1.0)


def headline_text(metric: MetricInfo, score: float | None) -> str:
    """The headline of one hidden-test score as every report prints it (an unscored run: 0, as `achievement`)."""
    return HEADLINE_FORMAT.format(achievement(metric, score))
