"""The test kit every built-in task goes through, parametrized over the folders under ml_tasks/: a new task is
covered by being there. Where a check differs per task, the manifest or the small tables below say how.

Default suite: the manifest and description, the knob surface, what prepare hides, the baseline's val phase
in the real sandbox against its record, each trivial overlay's val score against the floor, and the evaluator
on hostile predictions made from the baseline's own (sandboxed runs of the tasks in SANDBOX_SLOW: slow). Each task is prepared once and its baseline run once per
session (tests/task_kit.py). Slow (`pytest -m slow`): the record's test phase, trivial overlays on test, the
val-phase leak probe, a second prepare, the reference solution on every baseline seed, and the full
`setup.py --check` (which `.ci/run` also runs for every task). Task-specific checks: tests/ml_tasks/.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from task_kit import (PASS, RECORD_ABS_TOL, RECORD_REL_TOL, TASK_NAMES, baseline_run, evaluator_rejects, evaluator,
                      full_check, leak_probe, overlay_run, rejects_inprocess, prepared_checksums, prepared_task,
                      spec_of, task_dir)

# The columns that name a row of a CSV output, where not "id" (the evaluator matches predictions to labels by them).
ROW_KEYS = {"causal_discovery": ("dataset", "source", "target"), "causal_effect": ("rep", "unit"),
            "causality": ("rep", "unit"), "continual_learning": ("after_split", "id")}
# Hostile cases that do not apply to a task's output, and why.
NOT_HOSTILE = {"causal_discovery": {"missing-row": "an edge list may leave out any edge"}}
# Tasks whose sandboxed runs (baseline record, trivial overlays, hostile cases built from the baseline's
# predictions) are slow-marked, and why; their own file covers the floor in-process.
SANDBOX_SLOW = {"adversarial_robustness": "the evaluator runs a full adversarial attack per phase (~30 CPU-s)"}

FILE_CASES = ("no-file", "empty", "binary", "oversized")  # every output
CSV_CASES = ("nan", "foreign-id", "duplicated-id", "missing-row")  # CSV outputs, made from the baseline's
# The case run through the evaluator's CLI (exit code, one stderr line, no traceback, no metrics file); the
# others call its `main` in-process, which asserts the same without an interpreter start per case.
CLI_CASE = "binary"


def _param(*values, id: str, slow: bool = False):
    return pytest.param(*values, id=id, marks=[pytest.mark.slow] if slow else [])


# -- the manifest ------------------------------------------------------------------------------------------------

def test_there_are_tasks() -> None:
    assert "causality" in TASK_NAMES and len(TASK_NAMES) >= 13


@pytest.mark.parametrize("name", TASK_NAMES)
def test_manifest_is_complete(name: str) -> None:
    spec = spec_of(name)
    assert spec.name == name, "the folder and the manifest's name must agree"
    m = spec.metric
    assert m.rationale.strip() and m.best_possible is not None, "say what the best possible score is"
    assert m.better(m.target, m.floor) and not m.better(m.target, m.best_possible)
    assert spec.baseline is not None and spec.baseline.seeds, "record the baseline's measured val and test scores"
    assert spec.checks.trivial, "declare a trivial-predictor overlay (checks.trivial)"
    assert spec.checks.reference is not None, "declare a reference solution (checks.reference)"


@pytest.mark.parametrize("name", TASK_NAMES)
def test_description_states_the_metric_and_limits(name: str) -> None:
    spec = spec_of(name)
    text = spec.description_text().lower()
    assert spec.metric.name.lower() in text, f"{spec.description} never names the metric {spec.metric.name}"
    assert f"{spec.metric.direction} is better" in text, "say whether lower or higher is better"
    # the limit is CPU time of the job (benchmark/executors): say so in the unit
    assert f"{spec.budget.step_timeout_s:g} cpu-seconds" in text, "state the run's limit in CPU seconds (e.g. '120 CPU-seconds')"


@pytest.mark.parametrize("name", TASK_NAMES)
def test_every_params_value_is_a_declared_knob(name: str) -> None:
    spec = spec_of(name)
    assert spec.knobs is not None, "declare the tunable surface (knobs)"
    params = json.loads((task_dir(name) / spec.code / spec.knobs.file).read_text())
    assert set(params) == set(spec.knobs.space)


# -- prepare -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", TASK_NAMES)
def test_prepare_keeps_labels_out_of_agent_data(name: str) -> None:
    """No file an agent's job can read (public data; test inputs) is a label file, by name or by bytes."""
    prepared = prepared_task(name)
    labels = {p.name: p.read_bytes() for p in prepared.labels_dir.rglob("*") if p.is_file()}
    assert labels, "prepare wrote no labels"
    hidden = {data for data in labels.values() if data}
    for folder in (prepared.public_dir, prepared.test_inputs_dir):
        for path in (p for p in folder.rglob("*") if p.is_file()):
            assert path.name not in labels, f"{path} has a label file's name"
            assert path.read_bytes() not in hidden, f"{path} holds a label file's bytes"


@pytest.mark.slow
@pytest.mark.parametrize("name", TASK_NAMES)
def test_prepare_is_deterministic(name: str, tmp_path: Path) -> None:
    assert prepared_checksums(name, tmp_path / "a") == prepared_checksums(name, tmp_path / "b")


@pytest.mark.slow
@pytest.mark.parametrize("name", TASK_NAMES)
def test_val_phase_cannot_reach_hidden_data(name: str, tmp_path: Path) -> None:
    """The leak probe (`--check`'s label-probe row) walks the val sandbox for hidden paths and for files with
    a label or test-input file's bytes."""
    report = leak_probe(name, tmp_path / "probe")
    if report is None:
        pytest.skip("without bwrap the host filesystem is visible; the sandbox is what hides the labels")
    assert report["entries"] > 0 and report["findings"] == []


# -- the baseline and the floor ----------------------------------------------------------------------------------

def _matches(score: float | None, recorded: float) -> bool:
    return score is not None and math.isclose(score, recorded, rel_tol=RECORD_REL_TOL, abs_tol=RECORD_ABS_TOL)


@pytest.mark.parametrize("name, phase", [_param(name, phase, id=f"{name}-{phase}", slow=phase == "test" or name in
                                                 SANDBOX_SLOW) for name in TASK_NAMES for phase in ("val", "test")])
def test_baseline_reproduces_its_record_in_the_sandbox(name: str, phase: str) -> None:
    spec = spec_of(name)
    run = baseline_run(name, phase)
    assert run.outcome.ok, run.outcome.bug_reason
    recorded = getattr(spec.baseline, phase)[0]
    assert _matches(run.outcome.primary, recorded), (run.outcome.primary, recorded)


def _trivial_params() -> list:
    params = []
    for name in TASK_NAMES:
        for folder in spec_of(name).checks.trivial:
            for phase in ("val", "test"):
                params.append(_param(name, folder, phase, id=f"{name}-{Path(folder).name}-{phase}",
                                     slow=phase == "test" or name in SANDBOX_SLOW))
    return params


@pytest.mark.parametrize("name, folder, phase", _trivial_params())
def test_trivial_overlay_scores_no_better_than_the_floor(name: str, folder: str, phase: str) -> None:
    spec = spec_of(name)
    run = overlay_run(name, folder, phase)
    assert run.outcome.ok, run.outcome.bug_reason
    floor = spec.metric.floor
    slack = abs(floor) * 1e-9  # the floor is often exactly what a constant scores
    assert not spec.metric.better(run.outcome.primary, floor + (slack if spec.metric.higher_is_better else -slack))


# -- the evaluator on hostile predictions ------------------------------------------------------------------------

def _hostile_params() -> list:
    params = []
    for name in TASK_NAMES:
        csv = spec_of(name).outputs[0].endswith(".csv")
        for case in FILE_CASES + (CSV_CASES if csv else ()):
            if case not in NOT_HOSTILE.get(name, {}):
                needs_baseline = case == "oversized" or case in CSV_CASES
                params.append(_param(name, case, id=f"{name}-{case}", slow=needs_baseline and name in SANDBOX_SLOW))
    return params


def _hostile_csv(frame: pd.DataFrame, keys: list[str], case: str) -> pd.DataFrame:
    """The baseline's predictions (read as text) made invalid in one way."""
    frame = frame.copy()
    if case == "nan":
        values = [c for c in frame.columns if c not in keys] or keys[-1:]
        frame.loc[0, values[0]] = "nan"
    elif case == "foreign-id":
        key = keys[-1]
        numeric = frame[key].str.fullmatch(r"-?\d+").all()
        frame.loc[0, key] = str(int(frame[key].astype(int).max()) + 10**6) if numeric else "foreign"
    elif case == "duplicated-id":
        frame = pd.concat([frame, frame.iloc[[0]]], ignore_index=True)
    elif case == "missing-row":
        frame = frame.iloc[1:]
    return frame


def _baseline_predictions(name: str) -> Path:
    run = baseline_run(name, "val")
    assert run.outcome.ok and run.predictions is not None, run.outcome.bug_reason
    return run.predictions


@pytest.mark.parametrize("name, case", _hostile_params())
def test_evaluator_rejects_hostile_predictions(name: str, case: str, tmp_path: Path, capsys) -> None:
    """Predictions the evaluator cannot score give one line on stderr, a non-zero exit and no metrics:
    never a traceback, never a score. Each case changes the baseline's real val predictions in one way."""
    prepared = prepared_task(name)
    spec = prepared.spec
    output = spec.outputs[0]
    preds = tmp_path / "predictions"
    preds.mkdir()
    target = preds / output
    limit = int(spec.evaluation.max_output_mb * 1024**2)
    if case == "empty":
        target.write_bytes(b"")
    elif case == "binary":
        target.write_bytes(b"\x00\xff\xfe garbage \x89PNG\r\n" * 64)
    elif case == "oversized":  # the real predictions repeated past the task's output limit
        data = (_baseline_predictions(name) / output).read_bytes()
        target.write_bytes(data * (limit // max(len(data), 1) + 2))
    elif case in CSV_CASES:
        keys = list(ROW_KEYS.get(name, ("id",)))
        frame = pd.read_csv(_baseline_predictions(name) / output, dtype=str, keep_default_na=False)
        assert set(keys) <= set(frame.columns), f"add {name}'s row keys to ROW_KEYS"
        _hostile_csv(frame, keys, case).to_csv(target, index=False)
    if case == CLI_CASE:
        line = evaluator_rejects(spec, "val", preds, prepared.labels_dir, tmp_path)
    else:
        line = rejects_inprocess(evaluator(name), "val", preds, prepared.labels_dir, tmp_path, capsys)
    assert line and len(line) < 2000


# -- slow: the reference solution and the full check -------------------------------------------------------------

# Every row but the manifest, the workspace and the reference: test_full_check runs the rest.
NOT_REFERENCE = ("description", "editable", "prepare-deterministic", "isolation", "label-probe", "baseline-val", "determinism",
                 "baseline-test", "baseline-record", "target-spread", "trivial")


@pytest.mark.slow
@pytest.mark.timeout(7200)  # a test phase per baseline seed; each phase is bounded by the task's own limits
@pytest.mark.parametrize("name", TASK_NAMES)
def test_reference_reaches_the_target_on_every_seed(name: str, workspace_root: Path) -> None:
    """Through `setup.py --check --reference`'s own code: the target is attainable and the evaluator scores it."""
    report = full_check(name, workspace_root, skip=NOT_REFERENCE, reference=True)
    print(report.table())
    rows = {row.name: row for row in report.rows}
    assert rows["reference"].status == PASS and report.ok, report.table()


@pytest.mark.slow
@pytest.mark.parametrize("name", TASK_NAMES)
def test_full_check(name: str, workspace_root: Path) -> None:
    report = full_check(name, workspace_root)
    print(report.table())
    assert report.ok, report.table()
