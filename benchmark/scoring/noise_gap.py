"""The selected node's val->test gap against the noise of the task's sets.

Why: the best-val node is the maximum of many noisy val scores, so its val score overstates its test
score; only in units of the sets' noise can a reader tell selection optimism from a real val/test shift.
The noise is the task manifest's `noise` block as the run recorded it in summary.json (what its agents
were told), else the current manifest's when it was measured on the run's task version.

`best_drop` is how much worse the best-val node scored on test than on val (positive: worse; in the
metric's own direction), `best_drop_sd` the same over the combined sd sqrt(val_sd^2 + test_sd^2);
`baseline_drop_sd` is the baseline's own, for the share of the gap a val/test shift explains.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from researchbench.benchmark.scoring.normalize import NAN
from researchbench.benchmark.scoring.runs import RunRecord
from researchbench.benchmark.tasks.noise import sd_text

COLUMNS = ("noise_unit", "val_size", "test_size", "val_sd", "test_sd", "noise_method", "best_drop", "best_drop_sd",
           "baseline_drop", "baseline_drop_sd")


@dataclass(frozen=True)
class TaskNoise:
    unit: str
    val_size: int
    test_size: int
    val_sd: float
    test_sd: float
    method: str

    @property
    def combined_sd(self) -> float:
        return math.hypot(self.val_sd, self.test_sd)


def _parse(record: Any) -> TaskNoise | None:
    try:
        val, test = record["val"], record["test"]
        return TaskNoise(str(record["unit"]), int(val["size"]), int(test["size"]), float(val["sd"]),
                         float(test["sd"]), str(record.get("method") or ""))
    except (KeyError, TypeError, ValueError):
        return None


@functools.lru_cache(maxsize=None)
def _manifest_noise(task: str, version: str) -> TaskNoise | None:
    """The registered task's measured noise, if it was measured on this version."""
    try:
        from researchbench.benchmark.plugins.manager import get_registry
        from researchbench.benchmark.tasks.manifest import load_task

        noise = load_task(get_registry().tasks[task]).noise
    except Exception:  # an unknown or broken task: its runs still score, without noise
        return None
    if noise is None or noise.measured is None or noise.measured.version != version:
        return None
    return _parse(noise.record())


def run_noise(run: RunRecord) -> TaskNoise | None:
    """The noise a run's agents were told, else the manifest's for the run's task version."""
    recorded = run.summary.noise
    if isinstance(recorded, dict) and "val" in recorded:
        return _parse(recorded)
    return _manifest_noise(run.task, run.task_version)


def drop(direction: str, val: float | None, test: float | None) -> float:
    """How much worse test is than val (positive: worse), in the metric's own direction."""
    if val is None or test is None:
        return NAN
    return val - test if direction == "higher" else test - val


def gap_columns(run: RunRecord) -> dict[str, Any]:
    """The noise's numbers and the best node's and the baseline's val->test drop, raw and in combined sd."""
    noise = run_noise(run)
    direction = run.metric.direction
    best = drop(direction, run.score("best", "val"), run.score("best", "test"))
    base = drop(direction, run.score("baseline", "val"), run.score("baseline", "test"))
    if noise is None:
        return {**dict.fromkeys(COLUMNS, NAN), "noise_unit": "", "noise_method": "", "best_drop": best,
                "baseline_drop": base}
    sd = noise.combined_sd
    return {"noise_unit": noise.unit, "val_size": noise.val_size, "test_size": noise.test_size,
            "val_sd": noise.val_sd, "test_sd": noise.test_sd, "noise_method": noise.method,
            "best_drop": best, "best_drop_sd": best / sd if sd > 0 else NAN,
            "baseline_drop": base, "baseline_drop_sd": base / sd if sd > 0 else NAN}


def task_notes(df: pd.DataFrame) -> list[str]:
    """One line per task (version): its sets' sizes and noise, and the selected nodes' mean drop in sd."""
    notes = []
    for task_id, part in df.groupby("task_id", sort=True):
        measured = part[part["noise_unit"] != ""]
        if measured.empty:
            task = part["task"].iloc[0]
            notes.append(f"noise on {task_id}: not measured for version {part['version'].iloc[0]} (no noise block "
                         f"in the runs or the manifest); `python setup.py --measure-noise {task}` measures it")
            continue
        row = measured.iloc[0]
        line = (f"noise on {task_id}: val {int(row['val_size'])} {row['noise_unit']}, test {int(row['test_size'])}; the "
                f"baseline's sd ±{sd_text(row['val_sd'])} on val, ±{sd_text(row['test_sd'])} on test "
                f"({row['noise_method'] or 'measured'}), so val differences under {sd_text(2 * row['val_sd'])} "
                "(2 sd) are within noise")
        drops = measured["best_drop"].dropna()
        if len(drops):
            base = measured["baseline_drop_sd"].dropna()
            mean = drops.mean()
            line += (f"; the selected (best-val) node scored {abs(mean):.3g} {'worse' if mean >= 0 else 'better'} on "
                     f"test than on val, mean of {len(drops)} run{'s' * (len(drops) != 1)}: a drop of "
                     f"{measured['best_drop_sd'].mean():.2g} combined sd"
                     + (f" (the baseline's own drop: {base.mean():.2g} sd)" if len(base) else ""))
        notes.append(line)
    return notes
