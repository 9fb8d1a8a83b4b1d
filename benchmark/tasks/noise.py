"""A task's measurement noise (`noise:` in task.yaml): how many units its val and test sets score, and how
much the baseline's metric moves by chance on them.

Why: a score picked as the best of many on a val set of a few hundred images is optimistic, and neither
an agent choosing between two val scores nor a reader comparing val with test can judge a difference
without the set's size and the metric's spread. The author declares what a unit is and how the measuring
command finds them (`unit`, `units`, `half_samples`); `python setup.py --measure-noise <task>` writes the rest
(docs/tasks.md, "Measurement noise"). The block is optional, so older manifests and third-party tasks
load without it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Callable

from researchbench.benchmark.common.errors import UserError

Fail = Callable[[str, str], UserError]  # (key, problem) -> the one-line error naming file and key
LABEL_SUFFIXES = (".csv", ".npz")


@dataclass(frozen=True)
class UnitFiles:
    """Where a phase's evaluated units are: the label files (`{phase}` in each name) whose rows they are, the
    columns naming a unit (also in the CSV outputs), and label columns to half-sample within."""

    labels: tuple[str, ...]
    key: tuple[str, ...] = ()
    strata: tuple[str, ...] = ()


@dataclass(frozen=True)
class PhaseNoise:
    """One phase's measured size and spread of the baseline's primary metric (1 sd)."""

    size: int  # units the evaluator scores
    sampling_sd: float | None = None  # over half-samples of the units (None: not resampled)
    seed_sd: float | None = None  # over the baseline's seeds (None: one seed)
    parts: dict[str, int] = field(default_factory=dict)  # units per stratum, when the author declared strata

    @property
    def sd(self) -> float:
        """The larger of the two: what prompts and the scorer use (a deterministic baseline's seed sd is 0,
        which says nothing about the set's sampling error)."""
        return max(v for v in (self.sampling_sd, self.seed_sd) if v is not None)


@dataclass(frozen=True)
class Measured:
    """How the numbers were measured: the task version, the baseline's seeds, the half-samples drawn."""

    version: str
    seeds: tuple[int, ...]
    draws: int


@dataclass(frozen=True)
class Noise:
    unit: str  # what one evaluated unit is, in the plural: "images", "graphs", "units"
    units: UnitFiles
    half_samples: bool = True  # False where resampling the units is not meaningful: seeds only
    measured: Measured | None = None
    val: PhaseNoise | None = None
    test: PhaseNoise | None = None

    @property
    def is_measured(self) -> bool:
        return self.val is not None and self.test is not None

    def method(self) -> str:
        """How the sd was measured, in a few words (prompts, notes)."""
        parts = []
        if self.measured is not None and self.val is not None and self.val.sampling_sd is not None:
            parts.append(f"half-samples of the {self.unit}")
        if self.measured is not None and len(self.measured.seeds) > 1:
            parts.append(f"seeds {_seed_range(self.measured.seeds)}")
        return " and ".join(parts)

    def record(self) -> dict[str, Any]:
        """What a run records in summary.json (the scorer reads it back)."""
        if not self.is_measured:
            return {"unit": self.unit}
        assert self.val is not None and self.test is not None
        return {"unit": self.unit, "method": self.method(),
                "version": self.measured.version if self.measured else None,
                **{phase: {"size": p.size, "sd": p.sd, "sampling_sd": p.sampling_sd, "seed_sd": p.seed_sd}
                   for phase, p in (("val", self.val), ("test", self.test))}}


def _seed_range(seeds: tuple[int, ...]) -> str:
    ordered = sorted(seeds)
    if ordered == list(range(ordered[0], ordered[-1] + 1)) and len(ordered) > 2:
        return f"{ordered[0]}-{ordered[-1]}"
    return ", ".join(map(str, ordered))


def sd_text(value: float) -> str:
    """An sd to two significant digits, as prompts and notes show it (no exponent: 120, not 1.2e+02)."""
    return f"{value:.2g}" if abs(value) < 100 else f"{value:.0f}"


def noise_fact(noise: Noise | None, metric: str) -> str:
    """The sentence agents read: both sets' sizes, the baseline's spread on validation, and what difference is
    noise; "" when the task has no measurement. The test set's sd is left out: it is a statistic of the
    baseline's hidden-test predictions (an accuracy's binomial sd gives the accuracy away), and an agent
    never sees a test score to judge with it."""
    if noise is None or not noise.is_measured:
        return ""
    val, test = noise.val, noise.test
    assert val is not None and test is not None

    def size(p: PhaseNoise) -> str:
        # An .npz file's parts are the set's make-up (forget / heldout / retain); strata of label columns
        # are counts of hidden labels, which agents are not told.
        shown = not noise.units.strata and 1 < len(p.parts) <= 4
        return f"{p.size} {noise.unit}" + (f" ({'; '.join(f'{k}: {v}' for k, v in p.parts.items())})" if shown else "")

    sets = f"Noise: validation set {size(val)}, hidden test set {size(test)}."
    if not val.sd:  # a baseline that scores the same on every half and seed (e.g. 0) gives no scale
        return (f"{sets} The baseline's validation {metric} did not vary at all (the same over seeds and "
                f"half-samples of the {noise.unit}), so it gives no scale of the noise: a solution that scores "
                f"otherwise varies by seed and sample, so compare close validation scores with care.")
    kinds = [f"half-samples of the {noise.unit} ±{sd_text(val.sampling_sd)}"] if val.sampling_sd is not None else []
    if val.seed_sd is not None and noise.measured is not None:
        kinds.append(f"seeds {_seed_range(noise.measured.seeds)} ±{sd_text(val.seed_sd)}")
    return (f"{sets} The baseline's validation {metric} "
            f"varies by about ±{sd_text(val.sd)} (1 sd; {', '.join(kinds)}): validation scores less than about "
            f"{sd_text(2 * val.sd)} apart (2 sd) are within noise, and the best of many validation scores tends to "
            f"overstate its test score. That spread is the baseline's: a solution that scores differently has its "
            f"own, which can be much smaller or larger.")


# -- reading the block ---------------------------------------------------------------------------------------


def _mapping(value: Any, key: str, fail: Fail, known: set[str], required: set[str] = frozenset()) -> dict:
    if not isinstance(value, dict):
        raise fail(key, "must be a mapping")
    for k in value:
        if k not in known:
            raise fail(f"{key}.{k}", f"is not a known key (known: {', '.join(sorted(known))})")
    for k in sorted(required - set(value)):
        raise fail(f"{key}.{k}", "is required")
    return value


def _strings(value: Any, key: str, fail: Fail, allow_empty: bool = False) -> tuple[str, ...]:
    if not isinstance(value, list) or (not value and not allow_empty) or not all(
            isinstance(v, str) and v for v in value):
        raise fail(key, "must be a non-empty list of non-empty strings")
    return tuple(value)


def _count(value: Any, key: str, fail: Fail, least: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise fail(key, f"must be an integer >= {least}, got {value!r}")
    return value


def _sd(value: Any, key: str, fail: Fail) -> float | None:
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise fail(key, f"must be a finite number >= 0, got {value!r}")
    return float(value)


def _units(raw: Any, fail: Fail) -> UnitFiles:
    raw = _mapping(raw, "noise.units", fail, {"labels", "key", "strata"}, {"labels"})
    labels = _strings(raw["labels"], "noise.units.labels", fail)
    for name in labels:
        pure = PurePosixPath(name)
        if "{phase}" not in name or pure.is_absolute() or ".." in pure.parts or not name.endswith(LABEL_SUFFIXES):
            raise fail("noise.units.labels", f"entry {name!r} must be a relative .csv or .npz file name "
                                                "holding {phase} (e.g. \"{phase}_labels.csv\")")
        if any(c in name.replace("{phase}", "") for c in "{}"):
            raise fail("noise.units.labels", f"entry {name!r} may use no placeholder but {{phase}}")
    if len({PurePosixPath(n).suffix for n in labels}) > 1:
        raise fail("noise.units.labels", "must be all .csv files or all .npz files")
    key = _strings(raw.get("key", []), "noise.units.key", fail, allow_empty=True)
    if not key and any(n.endswith(".csv") for n in labels):
        raise fail("noise.units.key", "is required for .csv label files (the columns naming a unit, e.g. [id])")
    strata = _strings(raw.get("strata", []), "noise.units.strata", fail, allow_empty=True)
    if labels[0].endswith(".npz") and (key or strata):
        raise fail("noise.units", "key and strata apply to .csv label files; an .npz file's arrays are split "
                                     "by row, each <part>_<field> group a stratum")
    return UnitFiles(labels=labels, key=key, strata=strata)


def _phase(raw: Any, key: str, fail: Fail) -> PhaseNoise:
    raw = _mapping(raw, key, fail, {"size", "sampling_sd", "seed_sd", "parts"}, {"size"})
    size = _count(raw["size"], f"{key}.size", fail, 1)
    sampling, seed = _sd(raw.get("sampling_sd"), f"{key}.sampling_sd", fail), _sd(raw.get("seed_sd"), f"{key}.seed_sd", fail)
    if sampling is None and seed is None:
        raise fail(key, "needs sampling_sd or seed_sd (or both)")
    parts_raw = raw.get("parts", {})
    if not isinstance(parts_raw, dict):
        raise fail(f"{key}.parts", "must be a mapping of stratum -> units")
    parts = {str(k): _count(v, f"{key}.parts.{k}", fail, 1) for k, v in parts_raw.items()}
    if parts and sum(parts.values()) != size:
        raise fail(f"{key}.parts", f"add up to {sum(parts.values())}, not the size {size}")
    return PhaseNoise(size=size, sampling_sd=sampling, seed_sd=seed, parts=parts)


def parse_noise(raw: Any, fail: Fail) -> Noise:
    """Validate a manifest's `noise` block; every problem is one line through `fail`."""
    raw = _mapping(raw, "noise", fail, {"unit", "units", "half_samples", "measured", "val", "test"}, {"unit", "units"})
    unit = raw["unit"]
    if not isinstance(unit, str) or not unit.strip():
        raise fail("noise.unit", "must be a non-empty word for one evaluated unit, plural (e.g. images)")
    units = _units(raw["units"], fail)
    half_samples = raw.get("half_samples", True)
    if not isinstance(half_samples, bool):
        raise fail("noise.half_samples", f"must be true or false, got {half_samples!r}")
    present = [k for k in ("measured", "val", "test") if raw.get(k) is not None]
    if present and len(present) != 3:
        missing = [k for k in ("measured", "val", "test") if k not in present]
        raise fail(f"noise.{missing[0]}", "is required with the other measured keys (measured, val, test); "
                                          "`python setup.py --measure-noise <task>` writes all three")
    if not present:
        return Noise(unit=unit.strip(), units=units, half_samples=half_samples)
    mraw = _mapping(raw["measured"], "noise.measured", fail, {"version", "seeds", "draws"}, {"version", "seeds", "draws"})
    if not isinstance(mraw["version"], str) or not mraw["version"]:
        raise fail("noise.measured.version", "must be the task version measured, a string")
    seeds = mraw["seeds"]
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise fail("noise.measured.seeds", "must be a non-empty list of integer seeds")
    measured = Measured(version=mraw["version"], seeds=tuple(seeds),
                        draws=_count(mraw["draws"], "noise.measured.draws", fail, 0))
    val, test = _phase(raw["val"], "noise.val", fail), _phase(raw["test"], "noise.test", fail)
    for key, phase in (("noise.val", val), ("noise.test", test)):
        if phase.sampling_sd is not None and (not half_samples or measured.draws == 0):
            raise fail(f"{key}.sampling_sd", "needs half_samples and measured.draws > 0 (it comes from half-samples)")
        if phase.seed_sd is not None and len(measured.seeds) < 2:
            raise fail(f"{key}.seed_sd", "needs at least two measured seeds")
    return Noise(unit=unit.strip(), units=units, half_samples=half_samples, measured=measured, val=val, test=test)
