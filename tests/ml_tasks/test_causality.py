"""The causality task's own checks: the driver outside the sandbox (what it opens and writes, what it rejects),
the floor is the oracle constant, the evaluator's PEHE and value rules, and what the public data hold.
The checks every task gets (record, floor, hostile predictions, reference): tests/ml_tasks/test_tasks.py."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from researchbench.benchmark.tasks import workspace as ws
from researchbench.benchmark.tasks.manifest import TaskSpec
from task_kit import (baseline_run, code_copy, driver_rejects, evaluate_ok, evaluator_rejects, phase_args, prepared,
                      run_driver, spec, task_dir, value_column_breakages)

TASK = "causality"
TASK_DIR = task_dir(TASK)
METRIC_KEYS = {"pehe", "ite_mae", "ate_abs_error"}

# Runs driver.py under an audit hook that logs every file the process opens or lists, so a test can
# prove the driver never touches labels and writes only under --out and its cwd.
AUDIT_WRAPPER = textwrap.dedent("""\
    import os, runpy, sys
    log = open(os.environ["AUDIT_LOG"], "w")
    WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    def hook(event, args):
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            path, mode, flags = args
            writes = any(c in (mode or "") for c in "wax+") or bool((flags or 0) & WRITE)
            log.write(f"{'w' if writes else 'r'}\\t{os.path.abspath(os.fsdecode(path))}\\n")
        elif event in ("os.listdir", "os.scandir") and isinstance(args[0], (str, bytes, os.PathLike)):
            log.write(f"l\\t{os.path.abspath(os.fsdecode(args[0]))}\\n")
    sys.addaudithook(hook)
    sys.argv = ["driver.py", *sys.argv[1:]]
    runpy.run_path("driver.py", run_name="__main__")
""")


def score(phase: str, predictions_dir: Path, prepared: ws.PreparedTask, tmp: Path) -> dict[str, float]:
    metrics = evaluate_ok(prepared.spec, phase, predictions_dir, prepared.labels_dir, tmp)
    assert set(metrics) == METRIC_KEYS
    return metrics


def recomputed_floor(labels: Path) -> float:
    truth = pd.read_csv(labels / "test_ite.csv")
    return float(np.mean([np.sqrt(np.mean((g - g.mean()) ** 2)) for _, g in truth.groupby("rep")["ite"]]))


# --- the baseline ---------------------------------------------------------------------------------------------

def test_baseline_val_phase_beats_the_floor_with_a_clean_stderr(spec: TaskSpec) -> None:
    outcome = baseline_run(TASK).outcome
    assert outcome.ok, outcome.bug_reason
    assert all(math.isfinite(v) for v in outcome.metrics.values())
    assert 0 < outcome.primary < spec.metric.floor
    assert b"Warning" not in outcome.stderr  # the agent reads stderr: keep it clean


def test_driver_never_opens_labels_and_writes_only_out_and_cwd(prepared: ws.PreparedTask, tmp_path: Path) -> None:
    """With the labels present next to the data, the driver never touches them; its predictions are the ones
    the sandboxed baseline run wrote."""
    code = code_copy(prepared, tmp_path / "code")
    (tmp_path / "audit.py").write_text(AUDIT_WRAPPER)
    log = tmp_path / "audit.log"
    out = tmp_path / "out"
    result = run_driver(code, *phase_args(prepared, "val", out), script=str(tmp_path / "audit.py"),
                        env={"AUDIT_LOG": str(log)})
    assert result.returncode == 0, result.stderr
    events = [line.split("\t", 1) for line in log.read_text().splitlines()]
    touched = [Path(p) for _, p in events]
    hidden = (prepared.labels_dir.resolve(), prepared.test_inputs_dir.resolve())
    assert not [p for p in touched if any(p == h or h in p.parents for h in hidden)]
    assert any(p == prepared.public_dir / "train.csv" for p in touched)  # the hook does see data reads
    allowed = (out.resolve(), code.resolve())
    writes = [Path(p) for kind, p in events if kind == "w"]
    assert writes and not [p for p in writes if not any(p == a or a in p.parents for a in allowed)]
    assert (out / "predictions.csv").read_bytes() == (baseline_run(TASK).predictions / "predictions.csv").read_bytes()


def test_val_predictions_do_not_pass_for_test(prepared: ws.PreparedTask, tmp_path: Path) -> None:
    """The evaluator checks every (rep, unit) of the phase."""
    evaluator_rejects(prepared.spec, "test", baseline_run(TASK).predictions, prepared.labels_dir, tmp_path)


# --- floor -----------------------------------------------------------------------------------------------------

def test_manifest_floor_matches_prepared_labels(prepared: ws.PreparedTask, spec: TaskSpec) -> None:
    assert recomputed_floor(prepared.labels_dir) == pytest.approx(spec.metric.floor, rel=1e-6)


def oracle_constants(prepared: ws.PreparedTask) -> list[float]:
    truth = pd.read_csv(prepared.labels_dir / "test_ite.csv")
    return [float(v) for v in truth.groupby("rep")["ite"].mean().sort_index()]


ORACLE_MODEL = """\
import numpy as np
CALLS = []
def estimate_ite(train, inputs, params):
    CALLS.append(1)  # the driver visits replications in order 0..9
    return np.full(len(inputs), params["ates"][len(CALLS) - 1] + params.get("shift", 0.0))
"""

NAIVE_MODEL = """\
import numpy as np
def estimate_ite(train, inputs, params):
    effect = train.loc[train.t == 1, "y"].mean() - train.loc[train.t == 0, "y"].mean()
    return np.full(len(inputs), effect)
"""


@pytest.mark.parametrize("model, shift", [(ORACLE_MODEL, 0.0), (ORACLE_MODEL, 0.3), (NAIVE_MODEL, None)],
                         ids=["oracle-constant", "shifted-constant", "naive-difference-in-means"])
def test_constant_predictors_do_not_beat_the_floor(prepared: ws.PreparedTask, spec: TaskSpec, tmp_path: Path,
                                                   model: str, shift: float | None) -> None:
    params = {"ates": oracle_constants(prepared), "shift": shift} if shift is not None else {}
    code = code_copy(prepared, tmp_path / "code", {"model.py": model, "params.json": json.dumps(params)})
    result = run_driver(code, *phase_args(prepared, "test", tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    pehe = score("test", tmp_path / "out", prepared, tmp_path)["pehe"]
    assert not spec.metric.better(pehe, spec.metric.floor * (1 - 1e-9))
    if shift == 0.0:
        assert pehe == pytest.approx(spec.metric.floor, rel=1e-6)  # the floor is exactly the oracle constant


# --- evaluator rejects invalid predictions ------------------------------------------------------------------------

def _valid_val_predictions(prepared: ws.PreparedTask) -> pd.DataFrame:
    frame = pd.read_csv(prepared.labels_dir / "val_ite.csv")
    return frame.assign(ite=frame["ite"] + 0.1)


@pytest.mark.parametrize("breakage, reason", value_column_breakages("ite", "unit"))
def test_evaluator_rejects_invalid_predictions(prepared: ws.PreparedTask, tmp_path: Path, breakage, reason: str) -> None:
    """Beyond tests/ml_tasks/test_tasks.py's hostile cases (no file, binary, NaN, foreign, duplicated, missing rows)."""
    preds = tmp_path / "preds"
    preds.mkdir()
    breakage(_valid_val_predictions(prepared)).to_csv(preds / "predictions.csv", index=False)
    assert reason in evaluator_rejects(prepared.spec, "val", preds, prepared.labels_dir, tmp_path)


def test_evaluator_scores_known_errors(prepared: ws.PreparedTask, tmp_path: Path) -> None:
    preds = tmp_path / "preds"
    preds.mkdir()
    _valid_val_predictions(prepared).sample(frac=1.0, random_state=0).to_csv(preds / "predictions.csv", index=False)
    metrics = score("val", preds, prepared, tmp_path)  # row order does not matter; every error is +0.1
    assert metrics == pytest.approx({"pehe": 0.1, "ite_mae": 0.1, "ate_abs_error": 0.1}, rel=1e-6)


# --- the driver rejects bad model output -------------------------------------------------------------------------

@pytest.mark.parametrize("files, reason", [
    ({"model.py": "import numpy as np\ndef estimate_ite(train, inputs, params):\n    return np.zeros(3)\n"},
     "expected (150,)"),
    ({"model.py": "import numpy as np\ndef estimate_ite(train, inputs, params):\n"
                  "    return np.full(len(inputs), np.nan)\n"}, "non-finite"),
    ({"model.py": "def fit(train):\n    pass\n"}, "must define estimate_ite"),
    ({"params.json": "{not json"}, "params.json is not valid JSON"),
], ids=["wrong-length", "nan", "no-function", "bad-params"])
def test_driver_rejects_bad_model_output(prepared: ws.PreparedTask, tmp_path: Path, files: dict, reason: str) -> None:
    stderr = driver_rejects(prepared, tmp_path, files, reason, output="predictions.csv")
    assert "driver error: " in stderr, stderr


def test_driver_test_phase_needs_test_inputs(prepared: ws.PreparedTask, tmp_path: Path) -> None:
    code = code_copy(prepared, tmp_path / "code")
    result = run_driver(code, "--phase", "test", "--data", str(prepared.public_dir), "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and "--test-inputs" in result.stderr


# --- what the agent can see ----------------------------------------------------------------------------------------

def test_public_data_hides_outcomes_of_val_and_test_units(prepared: ws.PreparedTask) -> None:
    train = pd.read_csv(prepared.public_dir / "train.csv")
    val = pd.read_csv(prepared.public_dir / "val_inputs.csv")
    test = pd.read_csv(prepared.test_inputs_dir / "test_inputs.csv")
    assert sorted(p.name for p in prepared.public_dir.iterdir()) == ["train.csv", "val_inputs.csv"]
    assert {"t", "y"} <= set(train.columns) and not {"t", "y", "ite"} & (set(val.columns) | set(test.columns))
    units = [set(frame["unit"]) for frame in (train, val, test)]
    assert not (units[0] & units[1] or units[0] & units[2] or units[1] & units[2])
    assert sum(map(len, units)) == 747 and train["rep"].nunique() == 10
    description = (TASK_DIR / "description.md").read_text()
    assert "labels" not in description and "test_inputs" not in description and "evaluate.py" not in description
