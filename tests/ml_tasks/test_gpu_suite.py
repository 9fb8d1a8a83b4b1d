"""The gpu suite: each task the same code as a task with code of its own, at a larger scale, on one GPU.
Without a GPU its CPU fallback (its code on its base's lite data) must run to a valid score, so the
default tests exercise the GPU tasks' code path; benchmarks/gpu_check.py measures them on a GPU."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from task_kit import TASK_NAMES, VARIANT_NAMES

from researchbench.benchmark.executors.local import LocalExecutor, LocalExecutorConfig
from researchbench.benchmark.run.experiment import run_phase
from researchbench.benchmark.tasks.manifest import load_task
from researchbench.benchmark.tasks.suites import suite_tasks
from researchbench.benchmark.tasks.variants import cpu_fallback
from researchbench.benchmark.tasks.workspace import prepare

REPO = Path(__file__).resolve().parents[2]


def _spec(name: str):
    return load_task(REPO / "ml_tasks" / name)


def test_the_gpu_suite_is_every_variant_from_different_areas() -> None:
    gpu = suite_tasks("gpu")
    assert sorted(gpu) == VARIANT_NAMES and len(gpu) >= 3
    assert len({_spec(name).domain for name in gpu}) == len(gpu), "one task per area"


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_a_gpu_task_is_its_base_at_a_larger_scale_measured_there(name: str) -> None:
    spec = _spec(name)
    base = load_task(spec.task_dir)
    assert spec.extends in TASK_NAMES and name == f"{spec.extends}_gpu"
    assert spec.resources.gpus == 1 and base.resources.gpus == 0
    assert "--scale" in spec.prepare and spec.prepare[spec.prepare.index("--scale") + 1] == "gpu"
    assert spec.phases == base.phases and spec.evaluator == base.evaluator, "the same driver and evaluator"
    assert spec.metric.target != base.metric.target, "the 1.0 is measured at this scale"
    assert "--scale gpu" in spec.metric.rationale, "say how the floor and the 1.0 were measured at this scale"
    assert spec.baseline is None or spec.baseline.environment is not None


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_a_gpu_tasks_description_states_its_metric_and_wall_clock_limit(name: str) -> None:
    spec = _spec(name)
    text = " ".join(spec.description_text().lower().split())
    assert spec.description_text() != load_task(spec.task_dir).description_text(), "its own sizes and limits"
    assert spec.metric.name.lower() in text and f"{spec.metric.direction} is better" in text
    assert f"{spec.budget.step_timeout_s:g} seconds of wall-clock time" in text, "a GPU job's limit is wall-clock"
    assert "gpu" in text


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_a_gpu_tasks_cpu_fallback_runs_its_code_to_a_valid_score(name: str) -> None:
    fallback = cpu_fallback(_spec(name))
    prepared = prepare(fallback, log=lambda *_: None)
    assert fallback.code_overlay is None or (prepared.baseline_dir / "params.json").exists()
    with LocalExecutor(LocalExecutorConfig()) as executor, tempfile.TemporaryDirectory() as tmp:
        outcome = run_phase(prepared, {}, "val", executor, Path(tmp) / "scratch", fallback.budget.step_timeout_s * 10)
    assert outcome.ok, outcome.bug_reason + outcome.stderr.decode()[-2000:]
    assert outcome.primary is not None and outcome.clock == "cpu"
