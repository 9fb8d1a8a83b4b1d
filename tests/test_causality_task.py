"""The causality task end to end, without the sandbox: prepare, driver, evaluator, floor.

The driver runs as a plain subprocess from a copy of the pristine baseline, the way an executor would
run it; sandboxing is tested elsewhere. Scores come only from predictions.csv via evaluate.py.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmark.tasks import workspace as ws
from benchmark.tasks.manifest import TaskSpec, load_task
from conftest import HANG_TIMEOUT_S

REPO = Path(__file__).resolve().parents[1]
TASK_DIR = REPO / "ml_tasks" / "causality"
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


@pytest.fixture(scope="module")
def spec() -> TaskSpec:
    return load_task(TASK_DIR)


@pytest.fixture(scope="module")
def prepared(spec: TaskSpec, tmp_path_factory: pytest.TempPathFactory) -> ws.PreparedTask:
    return ws.prepare(spec, root=tmp_path_factory.mktemp("causality-ws"), log=lambda _: None)


def code_copy(prepared: ws.PreparedTask, dest: Path, files: dict[str, str] | None = None) -> Path:
    """A fresh code dir: the pristine baseline with some editable files replaced."""
    shutil.copytree(prepared.baseline_dir, dest)
    for rel, text in (files or {}).items():
        (dest / rel).write_text(text)
    return dest


def run_driver(code: Path, *args: str, wrapper: Path | None = None, env: dict[str, str] | None = None,
               timeout: float = HANG_TIMEOUT_S) -> tuple[subprocess.CompletedProcess, float]:
    argv = [sys.executable, str(wrapper) if wrapper else "driver.py", *args]
    started = time.perf_counter()
    result = subprocess.run(argv, cwd=code, capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, "OMP_NUM_THREADS": "2", **(env or {})})
    return result, time.perf_counter() - started


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path, metrics: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TASK_DIR / "evaluate.py"), "--phase", phase,
                           "--predictions-dir", str(predictions_dir), "--labels", str(labels_dir),
                           "--metrics", str(metrics)], capture_output=True, text=True, timeout=60)


def score(phase: str, predictions_dir: Path, prepared: ws.PreparedTask, tmp: Path) -> dict[str, float]:
    metrics = tmp / f"metrics-{phase}.json"
    result = evaluate(phase, predictions_dir, prepared.labels_dir, metrics)
    assert result.returncode == 0, result.stderr
    payload = json.loads(metrics.read_text())
    assert set(payload) == {"metrics"} and set(payload["metrics"]) == METRIC_KEYS
    return payload["metrics"]


def recomputed_floor(labels: Path) -> float:
    truth = pd.read_csv(labels / "test_ite.csv")
    return float(np.mean([np.sqrt(np.mean((g - g.mean()) ** 2)) for _, g in truth.groupby("rep")["ite"]]))


@pytest.fixture(scope="module")
def baseline_val(prepared: ws.PreparedTask, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The baseline val phase, run where no labels exist: only a copy of the public data is around."""
    tmp = tmp_path_factory.mktemp("baseline-val")
    data = tmp / "data"
    shutil.copytree(prepared.public_dir, data)
    code = code_copy(prepared, tmp / "code")
    result, seconds = run_driver(code, "--phase", "val", "--data", str(data), "--out", str(tmp / "out"))
    assert result.returncode == 0, result.stderr
    return {"seconds": seconds, "predictions": (tmp / "out" / "predictions.csv").read_bytes(),
            "metrics": score("val", tmp / "out", prepared, tmp), "stderr": result.stderr}


# --- the baseline ---------------------------------------------------------------------------------------------

def test_baseline_val_phase_beats_the_floor(baseline_val: dict, spec: TaskSpec) -> None:
    # Its time is `setup.py --check`'s baseline-val row (60 s on 2 idle cores), not a test's: load would flake it.
    pehe = baseline_val["metrics"]["pehe"]
    assert math.isfinite(pehe) and 0 < pehe < spec.metric.floor
    assert all(math.isfinite(v) for v in baseline_val["metrics"].values())
    assert "Warning" not in baseline_val["stderr"]  # the agent reads stderr: keep it clean
    print(f"baseline val PEHE {pehe:.4f} in {baseline_val['seconds']:.1f} s (floor {spec.metric.floor:.4f})")


def test_driver_never_opens_labels_and_writes_only_out_and_cwd(prepared: ws.PreparedTask, baseline_val: dict,
                                                                tmp_path: Path) -> None:
    """With the labels present next to the data, the driver never touches them; output is deterministic."""
    code = code_copy(prepared, tmp_path / "code")
    (tmp_path / "audit.py").write_text(AUDIT_WRAPPER)
    log = tmp_path / "audit.log"
    out = tmp_path / "out"
    result, _ = run_driver(code, "--phase", "val", "--data", str(prepared.public_dir), "--out", str(out),
                           wrapper=tmp_path / "audit.py", env={"AUDIT_LOG": str(log)})
    assert result.returncode == 0, result.stderr
    events = [line.split("\t", 1) for line in log.read_text().splitlines()]
    touched = [Path(p) for _, p in events]
    hidden = (prepared.labels_dir.resolve(), prepared.test_inputs_dir.resolve())
    assert not [p for p in touched if any(p == h or h in p.parents for h in hidden)]
    assert any(p == prepared.public_dir / "train.csv" for p in touched)  # the hook does see data reads
    allowed = (out.resolve(), code.resolve())
    writes = [Path(p) for kind, p in events if kind == "w"]
    assert writes and not [p for p in writes if not any(p == a or a in p.parents for a in allowed)]
    assert (out / "predictions.csv").read_bytes() == baseline_val["predictions"]


def test_baseline_test_phase_beats_the_floor(prepared: ws.PreparedTask, spec: TaskSpec, tmp_path: Path) -> None:
    code = code_copy(prepared, tmp_path / "code")
    result, seconds = run_driver(code, "--phase", "test", "--data", str(prepared.public_dir), "--test-inputs",
                                 str(prepared.test_inputs_dir), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    pehe = score("test", tmp_path / "out", prepared, tmp_path)["pehe"]
    assert math.isfinite(pehe) and pehe < spec.metric.floor
    print(f"baseline test PEHE {pehe:.4f} in {seconds:.1f} s")
    # val predictions do not pass for test ones: the evaluator checks every (rep, unit)
    assert evaluate("val", tmp_path / "out", prepared.labels_dir, tmp_path / "m.json").returncode != 0


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
    result, _ = run_driver(code, "--phase", "test", "--data", str(prepared.public_dir), "--test-inputs",
                           str(prepared.test_inputs_dir), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    pehe = score("test", tmp_path / "out", prepared, tmp_path)["pehe"]
    assert not spec.metric.better(pehe, spec.metric.floor * (1 - 1e-9))
    if shift == 0.0:
        assert pehe == pytest.approx(spec.metric.floor, rel=1e-6)  # the floor is exactly the oracle constant


# --- evaluator rejects invalid predictions ------------------------------------------------------------------------

def _valid_val_predictions(prepared: ws.PreparedTask) -> pd.DataFrame:
    frame = pd.read_csv(prepared.labels_dir / "val_ite.csv")
    return frame.assign(ite=frame["ite"] + 0.1)


@pytest.mark.parametrize("breakage, reason", [
    (lambda f: f.iloc[1:], "missing"),
    (lambda f: pd.concat([f, f.iloc[:1]]), "duplicated"),
    (lambda f: f.assign(ite=[np.nan] + list(f["ite"].iloc[1:])), "NaN or infinite"),
    (lambda f: f.assign(ite=[np.inf] + list(f["ite"].iloc[1:])), "NaN or infinite"),
    (lambda f: pd.concat([f, pd.DataFrame({"rep": [0], "unit": [10_000], "ite": [1.0]})]), "unexpected"),
    (lambda f: f.drop(columns="ite"), "lacks columns"),
    (lambda f: f.assign(ite=["abc"] + list(f["ite"].iloc[1:])), "not numbers"),
    (lambda f: f.assign(unit=f["unit"] + 0.5), "must hold integers"),
    (None, "was not written"),
], ids=["missing-row", "duplicate", "nan", "inf", "extra-row", "no-ite-column", "text", "float-unit", "no-file"])
def test_evaluator_rejects_invalid_predictions(prepared: ws.PreparedTask, tmp_path: Path, breakage, reason: str) -> None:
    preds = tmp_path / "preds"
    preds.mkdir()
    if breakage is not None:
        breakage(_valid_val_predictions(prepared)).to_csv(preds / "predictions.csv", index=False)
    metrics = tmp_path / "metrics.json"
    metrics.write_text('{"metrics": {"pehe": 0.0}}')  # a stale file must not survive a failed evaluation
    result = evaluate("val", preds, prepared.labels_dir, metrics)
    assert result.returncode != 0
    assert len(result.stderr.strip().splitlines()) == 1 and reason in result.stderr, result.stderr
    assert not metrics.exists()


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
    code = code_copy(prepared, tmp_path / "code", files)
    result, _ = run_driver(code, "--phase", "val", "--data", str(prepared.public_dir), "--out", str(tmp_path / "out"))
    assert result.returncode == 1 and "driver error: " in result.stderr and reason in result.stderr, result.stderr
    assert not (tmp_path / "out" / "predictions.csv").exists()


def test_driver_test_phase_needs_test_inputs(prepared: ws.PreparedTask, tmp_path: Path) -> None:
    code = code_copy(prepared, tmp_path / "code")
    result, _ = run_driver(code, "--phase", "test", "--data", str(prepared.public_dir), "--out", str(tmp_path / "o"))
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


# --- the target and the knob surface ---------------------------------------------------------------------------

def test_reference_solution_reaches_the_target(prepared: ws.PreparedTask, spec: TaskSpec, tmp_path: Path) -> None:
    """checks.reference (the well-specified surface-B fit) scores the target or better on the hidden test."""
    reference = TASK_DIR / spec.checks.reference
    files = {p.name: p.read_text() for p in reference.iterdir() if p.is_file()}
    code = code_copy(prepared, tmp_path / "code", files)
    result, _ = run_driver(code, "--phase", "test", "--data", str(prepared.public_dir), "--test-inputs",
                           str(prepared.test_inputs_dir), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    pehe = score("test", tmp_path / "out", prepared, tmp_path)["pehe"]
    assert spec.metric.best_possible < pehe <= spec.metric.target


def test_every_params_value_is_a_declared_knob(spec: TaskSpec) -> None:
    params = json.loads((TASK_DIR / "baseline" / "params.json").read_text())
    assert set(params) == set(spec.knobs.space)
