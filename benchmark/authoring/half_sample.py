"""The sampling sd of a task's metric on one phase's set: half-samples of its units, re-scored by the task's
own evaluator.

Why half-samples and not the bootstrap: a bootstrap draw repeats units, and every evaluator rejects a
repeated id; a random half drawn without replacement keeps every id unique. For a mean over n units the
spread of half-sample scores equals the full set's standard error (the delete-d jackknife with d = n/2,
Shao & Wu 1989: var = kept/dropped x the mean squared deviation of the half scores), and the same holds
approximately for smooth metrics (AUROC, worst-group accuracy, PEHE). Each half filters the phase's label
files and the matching rows of the CSV outputs, then calls the task's `evaluate(phase, predictions_dir,
labels_dir)`, so the metric is exactly the evaluator's. It runs in a child process of its own
(`in_child`), with the thread counts of the evaluator's sandbox (`evaluation.cpus`), as the evaluator
does: some evaluators pin their numerics by environment variables read when numpy loads.

For .csv label files a unit is a row of the first file named in `noise.units.labels`, named by the `key`
columns; rows with the same key in the other listed files and in the outputs go with it, and rows whose
key is no unit of the phase (another set's) are left alone. For .npz label files a unit is a row of the
arrays, and the arrays named `<part>_<field>` share rows: each part is a stratum.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Callable

import numpy as np

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.paths import REPO_ROOT
from researchbench.benchmark.executors.local.sandbox import THREAD_ENV
from researchbench.benchmark.tasks.manifest import TaskSpec, load_task
from researchbench.benchmark.tasks.noise import UnitFiles

Evaluate = Callable[[str, Path, Path], dict]
Unit = tuple[str, ...]


@dataclass(frozen=True)
class PhaseUnits:
    """A phase's units, each with its stratum ("" without strata), in file order."""

    keys: list[Unit]
    strata: list[str]

    def parts(self) -> dict[str, int]:
        """Units per stratum in natural order (rep=2 before rep=10; val and test alike); {} without strata."""
        counts: dict[str, int] = {}
        for stratum in self.strata:
            counts[stratum] = counts.get(stratum, 0) + 1
        return {} if list(counts) == [""] else {k: counts[k] for k in sorted(counts, key=_natural)}


def _natural(name: str) -> list:
    """A sort key that orders the numbers inside names by value."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


@dataclass(frozen=True)
class HalfSamples:
    size: int
    parts: dict[str, int]  # units per stratum ({} without strata)
    full: float  # the evaluator's score on every unit
    scores: list[float]  # one per half
    sd: float  # the full set's sampling sd, estimated from the halves
    exhaustive: bool  # every possible half was scored (exact), else random halves


def load_evaluate(spec: TaskSpec) -> Evaluate:
    """The task's `evaluate(phase, predictions_dir, labels_dir)` from the evaluator script its manifest runs."""
    script = next((spec.task_dir / part.removeprefix("{task_dir}/") for part in spec.evaluator
                   if part.startswith("{task_dir}/") and part.endswith(".py")), None)
    if script is None or not script.is_file():
        raise UserError(f"{spec.name}: its evaluator is no {{task_dir}}/<script>.py, so --measure-noise cannot "
                        "re-score half-samples; set noise.half_samples: false to measure over seeds only")
    module_spec = importlib.util.spec_from_file_location(f"researchbench_noise_{spec.name}", script)
    assert module_spec is not None and module_spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    evaluate = getattr(module, "evaluate", None)
    if not callable(evaluate):
        raise UserError(f"{spec.name}: {script.name} has no evaluate(phase, predictions_dir, labels_dir) function; "
                        "--measure-noise calls it on half-samples (set noise.half_samples: false to measure over seeds only)")
    return evaluate


def _read_csv(path: Path):
    import pandas as pd

    return pd.read_csv(path, dtype=str, keep_default_na=False)  # values as written: nothing re-formatted


def _label_files(files: UnitFiles, phase: str, labels_dir: Path) -> list[Path]:
    paths = [labels_dir / name.replace("{phase}", phase) for name in files.labels]
    for path in paths:
        if not path.is_file():
            raise UserError(f"noise.units.labels names {path.name}, which the prepared labels folder does not "
                            "hold; fix the manifest's noise.units")
    return paths


def units_of(files: UnitFiles, phase: str, labels_dir: Path) -> PhaseUnits:
    """The phase's units and their strata."""
    first = _label_files(files, phase, labels_dir)[0]
    if first.suffix == ".npz":
        with np.load(first, allow_pickle=False) as data:
            lengths = {name.split("_")[0]: len(data[name]) for name in data.files}
        keys = [(part, str(i)) for part, n in lengths.items() for i in range(n)]
        return PhaseUnits(keys, [part for part, _ in keys])
    frame = _read_csv(first)
    missing = [c for c in (*files.key, *files.strata) if c not in frame.columns]
    if missing:
        raise UserError(f"{first.name} has no column {missing[0]!r} (noise.units.key / strata)")
    keys = list(frame[list(files.key)].itertuples(index=False, name=None))
    if len(set(keys)) != len(keys):
        raise UserError(f"noise.units.key {list(files.key)} names several rows of {first.name}: a unit must "
                        "be one row of the first label file")
    strata = [" ".join(f"{c}={v}" for c, v in zip(files.strata, row))  # self-describing: "kind=near"
              for row in frame[list(files.strata)].itertuples(index=False, name=None)] if files.strata else [""] * len(keys)
    return PhaseUnits(keys, strata)


def _filter_csv(path: Path, dest: Path, key: tuple[str, ...], dropped: set[Unit]) -> None:
    frame = _read_csv(path)
    if not set(key) <= set(frame.columns):
        shutil.copyfile(path, dest)  # no unit rows in it (e.g. weights' metadata): left whole
        return
    rows = frame[list(key)].itertuples(index=False, name=None)
    frame[[row not in dropped for row in rows]].to_csv(dest, index=False, lineterminator="\n")


def _filter_npz(path: Path, dest: Path, kept: dict[str, list[int]]) -> None:
    with np.load(path, allow_pickle=False) as data:
        arrays = {name: data[name][kept[name.split("_")[0]]] for name in data.files}
    with open(dest, "wb") as out:  # np.savez would append .npz to a name without it
        np.savez(out, **arrays)


def write_half(files: UnitFiles, phase: str, labels_dir: Path, outputs_dir: Path, units: PhaseUnits,
               keep: set[Unit], dest: Path) -> tuple[Path, Path]:
    """Copies of the labels and outputs folders holding only the kept units of the phase."""
    labels, outputs = dest / "labels", dest / "outputs"
    for path in (labels, outputs):
        shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(labels_dir, labels)
    shutil.copytree(outputs_dir, outputs)
    dropped = set(units.keys) - keep
    npz = files.labels[0].endswith(".npz")
    kept_rows: dict[str, list[int]] = {}
    for part, index in sorted(keep, key=lambda u: (u[0], int(u[1]))) if npz else ():
        kept_rows.setdefault(part, []).append(int(index))
    for path in _label_files(files, phase, labels_dir):
        if npz:
            _filter_npz(path, labels / path.name, kept_rows)
        else:
            _filter_csv(path, labels / path.name, files.key, dropped)
    if not npz:
        for path in sorted(p for p in outputs_dir.rglob("*.csv") if p.is_file()):
            _filter_csv(path, outputs / path.relative_to(outputs_dir), files.key, dropped)
    return labels, outputs


def _halves(units: PhaseUnits, draws: int, rng: np.random.Generator) -> tuple[list[set[Unit]], bool]:
    """The halves to score: every one when there are at most `draws` of them, else `draws` random ones;
    each stratum keeps half of its units (rounded down)."""
    groups: dict[str, list[Unit]] = {}
    for key, stratum in zip(units.keys, units.strata):
        groups.setdefault(stratum, []).append(key)
    small = [s for s, members in groups.items() if len(members) < 2]
    if small:
        raise UserError(f"stratum {small[0]!r} has one unit: a half-sample cannot split it (noise.units.strata)")
    possible = math.prod(math.comb(len(m), len(m) // 2) for m in groups.values())
    if possible <= draws:
        per_group = [[set(c) for c in itertools.combinations(m, len(m) // 2)] for m in groups.values()]
        return [set().union(*combo) for combo in itertools.product(*per_group)], True
    halves = []
    for _ in range(draws):
        half: set[Unit] = set()
        for members in groups.values():
            chosen = rng.choice(len(members), size=len(members) // 2, replace=False)
            half.update(members[i] for i in chosen)
        halves.append(half)
    return halves, False


def half_sample(evaluate: Evaluate, metric: str, files: UnitFiles, phase: str, labels_dir: Path,
                outputs_dir: Path, draws: int, scratch: Path, seed: int = 0) -> HalfSamples:
    """Score the full set and `draws` halves of it (or every half, when there are fewer)."""
    units = units_of(files, phase, labels_dir)
    full = float(evaluate(phase, outputs_dir, labels_dir)[metric])
    halves, exhaustive = _halves(units, draws, np.random.default_rng(seed))
    scores = []
    for number, keep in enumerate(halves):
        labels, outputs = write_half(files, phase, labels_dir, outputs_dir, units, keep, scratch)
        try:
            scores.append(float(evaluate(phase, outputs, labels)[metric]))
        except Exception as exc:  # noqa: BLE001 - any failure names the half that caused it
            raise UserError(f"the evaluator failed on half-sample {number} of the {phase} {metric}: "
                            f"{type(exc).__name__}: {str(exc)[:200]}") from None
    kept = sum(len(h) for h in halves[:1])
    dropped = len(units.keys) - kept
    deviations = np.asarray(scores) - np.mean(scores)
    spread = float(np.sum(deviations ** 2) / (len(scores) - (0 if exhaustive else 1))) if len(scores) > 1 else 0.0
    sd = math.sqrt(kept / dropped * spread) if dropped else 0.0
    return HalfSamples(size=len(units.keys), parts=units.parts(), full=full, scores=scores, sd=sd, exhaustive=exhaustive)


# -- in a child process --------------------------------------------------------------------------------------

def in_child(spec: TaskSpec, phase: str, labels_dir: Path, outputs_dir: Path, draws: int, scratch: Path,
             timeout_s: float) -> HalfSamples:
    """`half_sample` in a fresh interpreter with the evaluator sandbox's thread counts; its result."""
    args = {"task_dir": str(spec.task_dir), "phase": phase, "labels": str(labels_dir), "outputs": str(outputs_dir),
            "draws": draws, "scratch": str(scratch)}
    env = {**os.environ, **dict.fromkeys(THREAD_ENV, str(spec.evaluation.cpus)), "OMP_WAIT_POLICY": "PASSIVE",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run([sys.executable, "-m", "researchbench.benchmark.authoring.half_sample", json.dumps(args)], env=env,
                              cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise UserError(f"{spec.name}: half-sampling the {phase} set took over {timeout_s:g} s; use fewer --draws") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no output"]
        raise UserError(f"{spec.name}: half-sampling the {phase} set failed: {lines[-1][:300]}")
    return HalfSamples(**json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    """The child: half-sample one phase and print the result as one JSON line."""
    parser = argparse.ArgumentParser(description="Half-sample one phase of a task (run by --measure-noise).")
    parser.add_argument("args", help="JSON: task_dir, phase, labels, outputs, draws, scratch")
    args = json.loads(parser.parse_args(argv).args)
    spec = load_task(Path(args["task_dir"]))
    assert spec.noise is not None
    try:
        result = half_sample(load_evaluate(spec), spec.metric.name, spec.noise.units, args["phase"],
                             Path(args["labels"]), Path(args["outputs"]), args["draws"], Path(args["scratch"]))
    except UserError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(json.dumps(asdict(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
