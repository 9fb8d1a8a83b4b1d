"""`python setup.py --measure-noise <task>`: measure what the manifest's `noise` block states.

The baseline's val and test phases run once per seed through the code path a run uses
(`researchbench.benchmark.run.experiment.run_phase` in the local sandbox), which gives the seed-to-seed sd. The first
seed's predictions (what the evaluator was handed) are then re-scored on half-samples of the units
(`half_sample`), which gives the sampling sd: a deterministic baseline's seed sd is 0 and says nothing
about how much a score moves with the set it is measured on, which is what selection on val is exposed to.
"""

from __future__ import annotations

import math
import statistics
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

from researchbench.benchmark.authoring.half_sample import in_child, units_of
from researchbench.benchmark.authoring.task_check import default_executor
from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.safefs import discard_tree
from researchbench.benchmark.executors.base import Executor
from researchbench.benchmark.run.experiment import run_phase
from researchbench.benchmark.tasks.manifest import TaskSpec, load_task
from researchbench.benchmark.tasks.noise import Measured, Noise, PhaseNoise
from researchbench.benchmark.tasks.workspace import PreparedTask, prepare

DEFAULT_DRAWS = 300  # half-samples per phase: the sd's own relative error is about 1/sqrt(2 x draws), 4%
FULL_SCORE_REL_TOL = 1e-6  # the in-process evaluator must give the sandboxed evaluator's score on the full set
SD_DIGITS = 4  # significant digits written to the manifest (the estimate is good to a few per cent)

Log = Callable[[str], None]


@dataclass(frozen=True)
class Measurement:
    noise: Noise
    scores: dict[str, list[float]]  # phase -> the baseline's score per seed
    seconds: float


def _rounded(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.{SD_DIGITS}g}")


def default_seeds(spec: TaskSpec) -> tuple[int, ...]:
    """The seeds of the last measurement (a re-measurement repeats it), else the baseline record's (the
    ones its scores were measured on), else 0, 1, 2."""
    if spec.noise is not None and spec.noise.measured is not None:
        return spec.noise.measured.seeds
    return spec.baseline.seeds if spec.baseline is not None else (0, 1, 2)


def measure(task_dir: Path, seeds: Sequence[int] | None = None, draws: int | None = None,
            log: Log = lambda _: None) -> Measurement:
    """Run the baseline on every seed and half-sample the first seed's predictions; the filled-in block.

    Seeds and draws default to the last measurement's (a re-measurement repeats it: an expensive
    evaluator's task keeps its smaller count), else the baseline record's seeds and DEFAULT_DRAWS."""
    started = time.perf_counter()
    spec = load_task(task_dir)
    declared = spec.noise
    if declared is None:
        raise UserError(f"{spec.name}: task.yaml has no noise block; declare its `unit` and `units` first "
                        "(docs/tasks.md, \"Measurement noise\"), then measure")
    seeds = tuple(dict.fromkeys(seeds)) if seeds else default_seeds(spec)
    if draws is None:
        draws = declared.measured.draws if declared.measured is not None and declared.measured.draws else DEFAULT_DRAWS
    if not declared.half_samples and len(seeds) < 2:
        raise UserError(f"{spec.name}: with half_samples false only seeds measure the noise; give at least two")
    if declared.half_samples and draws < 2:
        raise UserError("--draws must be at least 2 (half-samples per phase)")
    prepared = prepare(spec, log=lambda _: None)
    scratch = Path(tempfile.mkdtemp(prefix="researchbench-noise-"))
    executor = default_executor(spec.home)
    try:
        scores = _baseline_scores(spec, prepared, executor, seeds, scratch, log)
        phases, drawn = {}, 0
        for phase in ("val", "test"):
            seed_sd = _rounded(statistics.stdev(scores[phase])) if len(seeds) > 1 else None
            if not declared.half_samples:
                units = units_of(declared.units, phase, prepared.labels_dir)
                phases[phase] = PhaseNoise(size=len(units.keys), seed_sd=seed_sd, parts=units.parts())
                continue
            # each half is one evaluator call: allow each the evaluator's own time limit
            halves = in_child(spec, phase, prepared.labels_dir, scratch / f"outputs-{phase}", draws, scratch / "half",
                              timeout_s=(draws + 1) * spec.evaluation.timeout_s)
            _same_score(spec, phase, halves.full, scores[phase][0])
            log(f"{spec.name}: {phase}: {halves.size} {declared.unit}, {len(halves.scores)} half-samples"
                f"{' (every one)' if halves.exhaustive else ''}: sampling sd {halves.sd:.4g}"
                + (f", seed sd {seed_sd:.4g}" if seed_sd is not None else ""))
            phases[phase] = PhaseNoise(size=halves.size, sampling_sd=_rounded(halves.sd), seed_sd=seed_sd,
                                       parts=halves.parts)
            drawn = len(halves.scores)
    finally:
        executor.shutdown()
        discard_tree(scratch)
    noise = replace(declared, measured=Measured(version=spec.version, seeds=seeds, draws=drawn),
                    val=phases["val"], test=phases["test"])
    return Measurement(noise=noise, scores=scores, seconds=time.perf_counter() - started)


def _baseline_scores(spec: TaskSpec, prepared: PreparedTask, executor: Executor, seeds: tuple[int, ...],
                     scratch: Path, log: Log) -> dict[str, list[float]]:
    """The baseline's score per seed and phase, run as an experiment runs; the first seed's predictions are
    kept under scratch/outputs-<phase>."""
    scores: dict[str, list[float]] = {"val": [], "test": []}
    for seed in seeds:
        for phase in ("val", "test"):
            timeout = spec.budget.step_timeout_s if phase == "val" else spec.budget.final_test_timeout_s()
            keep = scratch / f"outputs-{phase}" if seed == seeds[0] else None
            outcome = run_phase(prepared, {}, phase, executor, scratch / "job", timeout, seed, keep)
            if not outcome.ok or outcome.primary is None:
                raise UserError(f"{spec.name}: the baseline's {phase} phase failed on seed {seed}: {outcome.bug_reason}")
            scores[phase].append(outcome.primary)
            log(f"{spec.name}: seed {seed} {phase}: {spec.metric.name} {outcome.primary:.6g} ({outcome.seconds:.1f} s)")
    return scores


def _same_score(spec: TaskSpec, phase: str, in_process: float, sandboxed: float) -> None:
    """Half-samples measure the task's metric only if evaluate() here scores the full set as the sandbox did."""
    if not math.isclose(in_process, sandboxed, rel_tol=FULL_SCORE_REL_TOL, abs_tol=1e-12):
        raise UserError(f"{spec.name}: evaluate() in this process scores the {phase} predictions {in_process!r}, the "
                        f"sandboxed evaluator {sandboxed!r}; half-samples of it would not measure the task's metric")
