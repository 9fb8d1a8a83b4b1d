"""The scorer puts each task's noise beside its scores (issue 25): a note per task with the sets' sizes and
the baseline's sd, and the best-val node's val->test drop, raw and in combined sd, per run and in the raw
table; a task without a measurement says so."""

from __future__ import annotations

import html
import math
from dataclasses import replace
from pathlib import Path

import pytest
from scoring_runs import Step, write_run

from researchbench.benchmark.scoring import noise_gap
from researchbench.benchmark.scoring.pipeline import Options, score
from researchbench.benchmark.scoring.runs import load_run
from researchbench.benchmark.tasks.manifest import load_task

REPO = Path(__file__).resolve().parents[2]
NOISE = {"unit": "images", "method": "half-samples of the images", "version": "1",
         "val": {"size": 359, "sd": 0.02, "sampling_sd": 0.02, "seed_sd": None},
         "test": {"size": 360, "sd": 0.015, "sampling_sd": 0.015, "seed_sd": None}}


def _run(root: Path, task: str, seed: int, best_val: float, best_test: float, noise: dict | None) -> Path:
    steps = [Step("0000", "baseline", "ok", 0.70), Step("0001", "draft", "ok", best_val, ["0000"])]
    return write_run(root, "aide", task, seed, steps, direction="higher", floor=0.1, target=0.95, metric="accuracy",
                     baseline_test=0.69, best_test=best_test, noise=noise)


def test_notes_and_the_raw_table_put_the_best_nodes_drop_against_the_noise(tmp_path: Path) -> None:
    results = tmp_path / "results"
    _run(results, "digits", 0, 0.90, 0.80, NOISE)  # a drop of 0.10 = 4 combined sd (0.025)
    _run(results, "digits", 1, 0.88, 0.83, NOISE)  # 0.05 = 2 sd
    _run(results, "unmeasured", 0, 0.90, 0.85, None)
    tables = score(Options(results=results, out=tmp_path / "out", embeddings=False, plots=False), lambda _: None)

    runs = tables["runs"].set_index(["task", "seed"])
    assert runs.loc[("digits", 0), "best_drop"] == pytest.approx(0.10)
    assert runs.loc[("digits", 0), "best_drop_sd"] == pytest.approx(4.0)
    assert runs.loc[("digits", 0), "baseline_drop_sd"] == pytest.approx(0.4)  # 0.70 -> 0.69
    assert runs.loc[("digits", 0), "val_size"] == 359 and runs.loc[("digits", 0), "test_sd"] == 0.015
    assert math.isnan(runs.loc[("unmeasured", 0), "best_drop_sd"])
    assert runs.loc[("unmeasured", 0), "best_drop"] == pytest.approx(0.05)  # the raw drop needs no noise

    raw = tables["raw"].set_index("task_id")
    assert raw.loc["digits", "best_drop_sd"] == pytest.approx(3.0) and raw.loc["digits", "best_drop"] == pytest.approx(0.075)

    notes = list(tables["notes"]["note"])
    digits = next(n for n in notes if n.startswith("noise on digits"))
    for fact in ("359 images", "360", "±0.02", "±0.015", "0.04", "half-samples", "0.075 worse", "3 combined sd",
                 "2 runs", "0.4 sd"):
        assert fact in digits, (fact, digits)
    unmeasured = next(n for n in notes if n.startswith("noise on unmeasured"))
    assert "not measured" in unmeasured and "--measure-noise unmeasured" in unmeasured
    written = (tmp_path / "out" / "tables.md").read_text()
    assert digits in written and "best_drop_sd" in written
    assert html.escape(digits) in (tmp_path / "out" / "report.html").read_text()


def test_a_drop_is_test_worse_than_val_in_the_metrics_direction() -> None:
    assert noise_gap.drop("higher", 0.9, 0.8) == pytest.approx(0.1)
    assert noise_gap.drop("lower", 1.0, 1.25) == pytest.approx(0.25)
    assert noise_gap.drop("lower", 1.0, 0.75) == pytest.approx(-0.25)  # better on test: a negative drop
    assert math.isnan(noise_gap.drop("higher", None, 0.8))


def test_a_run_without_recorded_noise_takes_the_manifests_of_its_version(tmp_path: Path) -> None:
    spec = load_task(REPO / "ml_tasks" / "semi_supervised")
    assert spec.noise is not None and spec.noise.measured is not None
    same = load_run(_run(tmp_path / "a", "semi_supervised", 0, 0.9, 0.8, None))
    same.summary = replace(same.summary, task_version=spec.noise.measured.version)
    noise = noise_gap.run_noise(same)
    assert noise is not None and (noise.val_size, noise.test_sd) == (spec.noise.val.size, spec.noise.test.sd)
    other = load_run(_run(tmp_path / "b", "semi_supervised", 0, 0.9, 0.8, None))
    other.summary = replace(other.summary, task_version="0.0.0-never")
    assert noise_gap.run_noise(other) is None  # measured on another version: not this run's noise
