"""task_runtime: the harness code task drivers and evaluators share (docs/tasks.md, "The task runtime")."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import researchbench.task_runtime as rt
from researchbench.task_runtime.effects import evaluate_effects

REPO = Path(__file__).resolve().parents[2]
RUNTIME = REPO / "task_runtime"


def test_the_runtime_imports_only_the_stdlib_numpy_pandas_and_torch() -> None:
    """It runs in every job and evaluator sandbox, where the harness (`benchmark`) is absent."""
    # torch and scikit-learn only inside the functions that need them (torch_setup; digits, at prepare time)
    # its own modules only relatively: it is `task_runtime` in a job and `researchbench.task_runtime` in the harness
    allowed = set(sys.stdlib_module_names) | {"numpy", "pandas", "torch", "sklearn"}
    for path in RUNTIME.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"
        for node in ast.parse(path.read_text()).body:  # at import time: never torch or scikit-learn
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                name = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                assert (name or "").split(".")[0] not in ("torch", "sklearn"), f"{path.name} imports {name} at load"
    code = "import sys, task_runtime, task_runtime.effects; print('benchmark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_every_public_name_is_exported_and_documented() -> None:
    for name in rt.__all__:
        obj = getattr(rt, name)
        assert (obj.__doc__ or "").strip(), f"{name} has no docstring"


def test_read_params_names_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "params.json"
    for text, reason in ((None, "is missing"), ("{", "not valid JSON"), ("[1]", "must hold a JSON object, got list")):
        if text is not None:
            path.write_text(text)
        with pytest.raises(rt.DriverError, match=reason):
            rt.read_params(path)
    path.write_text('{"lr": 0.1}')
    assert rt.read_params(path) == {"lr": 0.1}


def test_read_table_and_npz_require_their_columns(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("id,x\n1,2\n")
    assert list(rt.read_table(tmp_path / "t.csv", ["id"]).columns) == ["id", "x"]
    with pytest.raises(rt.DriverError, match=re.escape("t.csv lacks columns ['y']")):
        rt.read_table(tmp_path / "t.csv", ["id", "y"])
    with pytest.raises(rt.DriverError, match="does not exist"):
        rt.read_table(tmp_path / "absent.csv")
    np.savez(tmp_path / "a.npz", x=np.arange(3))
    assert rt.read_npz(tmp_path / "a.npz", ("x",))["x"].tolist() == [0, 1, 2]
    with pytest.raises(rt.DriverError, match=re.escape("lacks arrays ['y']")):
        rt.read_npz(tmp_path / "a.npz", ("x", "y"))


def test_written_predictions_and_metrics_replace_the_file_whole(tmp_path: Path) -> None:
    path = rt.write_predictions(tmp_path / "out", pd.DataFrame({"id": [1, 2], "pred": [0, 1]}))
    assert path == tmp_path / "out" / "predictions.csv" and path.read_text() == "id,pred\n1,0\n2,1\n"
    rt.write_metrics(tmp_path / "m.json", {"b": 1.0, "a": 0.5})
    assert json.loads((tmp_path / "m.json").read_text()) == {"metrics": {"a": 0.5, "b": 1.0}}
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["m.json", "out", "predictions.csv"]  # no temp left


@pytest.mark.parametrize("text, reason", [
    (None, "predictions.csv was not written"),
    ("id,pred\n" + "1,0\n" * 50, "larger than 100 bytes"),
    ("id,pred\n1,0\n1,2,3,4\n", "is not a readable CSV"),
    ("", "is not a readable CSV"),
    ("id,score\n1,0\n", "lacks columns ['pred'] (needs id, pred)"),
], ids=["absent", "too-large", "ragged", "empty", "no-column"])
def test_read_predictions_rejects_what_cannot_be_read(tmp_path: Path, text: str | None, reason: str) -> None:
    path = tmp_path / "predictions.csv"
    if text is not None:
        path.write_text(text)
    with pytest.raises(rt.InvalidPredictions, match=re.escape(reason)):
        rt.read_predictions(path, ["id", "pred"], max_bytes=100)


def test_integer_columns_reject_fractions_nan_inf_and_words() -> None:
    frame = pd.DataFrame({"id": ["1", "2.0", "3"]})
    assert rt.integer_column(frame, "id", "p.csv").tolist() == [1, 2, 3]
    for bad in ("0.5", "nan", "inf", "x"):
        with pytest.raises(rt.InvalidPredictions, match="p.csv: column id must hold integers"):
            rt.integer_column(pd.DataFrame({"id": ["1", bad]}), "id", "p.csv")


@pytest.mark.parametrize("pred, keys, reason", [
    ({"id": [1, 1, 2]}, ["id"], "1 duplicated ids, e.g. 1"),
    ({"id": [1]}, ["id"], "1 expected ids are missing, e.g. 2"),
    ({"id": [1, 2, 9]}, ["id"], "1 unexpected ids, e.g. 9"),
    ({"id": [2, 1], "rep": [0, 0]}, ["rep", "id"], "1 expected (rep, id) rows are missing, e.g. rep 1 id 1"),
], ids=["duplicate", "missing", "extra", "two-keys"])
def test_match_ids_wants_exactly_the_expected_keys(pred: dict, keys: list[str], reason: str) -> None:
    expected = pd.DataFrame({"id": [1, 2], "y": [0, 1]}) if keys == ["id"] else \
        pd.DataFrame({"rep": [0, 0, 1], "id": [1, 2, 1], "y": [0, 1, 1]})
    with pytest.raises(rt.InvalidPredictions, match=re.escape(reason)):
        rt.match_ids(pd.DataFrame(pred).assign(p=0), expected, keys)
    merged = rt.match_ids(pd.DataFrame({"id": [2, 1], "p": [5, 6]}), pd.DataFrame({"id": [1, 2], "y": [0, 1]}), ["id"])
    assert merged.sort_values("id")[["id", "y", "p"]].values.tolist() == [[1, 0, 6], [2, 1, 5]]


@pytest.mark.parametrize("raw, reason", [
    ({"w": np.zeros(20_001)}, "the budget is 20000"),
    ({"w": np.array(["a"])}, "must be numeric"),
    ({"a/b": np.zeros(1)}, "keys must be"),
    ([1, 2], "must return a dict"),
], ids=["over-budget", "strings", "path-key", "not-a-dict"])
def test_what_crosses_an_isolation_boundary_is_checked(raw, reason: str) -> None:
    with pytest.raises(rt.DriverError, match=reason):
        rt.as_arrays(raw, 20_000, "train_split")


@pytest.mark.parametrize("raw, reason", [
    (np.zeros(3), "expected (5,)"), (np.full(5, 10), "integer labels in 0..9"), (np.full(5, 0.5), "integer labels"),
    (np.full((5, 10), np.nan), "non-finite"),
], ids=["length", "range", "fraction", "nan-scores"])
def test_returned_labels_are_checked(raw, reason: str) -> None:
    with pytest.raises(rt.DriverError, match=re.escape(reason)):
        rt.as_labels(raw, 5, "predict")
    assert rt.as_labels(np.eye(5, 10), 5, "predict").tolist() == [0, 1, 2, 3, 4]


def test_as_vector_flattens_a_column_and_names_the_function() -> None:
    assert rt.as_vector([[1.0], [2.0]], 2, "fit").tolist() == [1.0, 2.0]
    with pytest.raises(rt.DriverError, match=re.escape("fit returned shape (3,); expected (2,), one label per")):
        rt.as_vector([1, 2, 3], 2, "fit", "label")
    with pytest.raises(rt.DriverError, match="fit must return numbers"):
        rt.as_vector(["a", "b"], 2, "fit")


def test_seed_everything_makes_the_global_generators_repeat() -> None:
    import random

    rt.seed_everything(7)
    first = (random.random(), np.random.rand())
    rt.seed_everything(7)
    assert (random.random(), np.random.rand()) == first


def _driver(tmp_path: Path, body: str) -> Path:
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / "val_inputs.csv").write_text("id\n1\n")
    script = tmp_path / "driver.py"
    script.write_text("import sys\nfrom task_runtime import DriverError, driver_main\n" + body +
                      "\nsys.exit(driver_main(run, 'test driver', inputs='{phase}_inputs.csv', seed_help='seed'))\n")
    return script


def test_driver_main_reports_a_driver_error_as_one_line(tmp_path: Path) -> None:
    script = _driver(tmp_path, "def run(args):\n    print(args.phase, args.inputs.name, args.seed)\n"
                               "    raise DriverError('model.py must define fit')\n")
    argv = [sys.executable, str(script), "--phase", "val", "--data", str(tmp_path / "data"), "--out", str(tmp_path)]
    result = subprocess.run([*argv, "--seed", "3"], capture_output=True, text=True)
    assert result.returncode == 1 and result.stdout == "val val_inputs.csv 3\n"
    assert result.stderr == "driver error: model.py must define fit\n"
    result = subprocess.run([*argv[:3], "test", *argv[4:]], capture_output=True, text=True)
    assert result.returncode == 2 and "--phase test needs --test-inputs" in result.stderr


def test_evaluator_main_removes_stale_metrics_and_reports_one_line(tmp_path: Path, capsys) -> None:
    labels, preds = tmp_path / "labels", tmp_path / "preds"
    labels.mkdir()
    preds.mkdir()
    (labels / "val_ite.csv").write_text("rep,unit,ite\n0,1,1.0\n0,2,3.0\n")
    metrics = tmp_path / "metrics.json"
    metrics.write_text('{"metrics": {"pehe": 0.0}}')
    argv = ["--phase", "val", "--predictions-dir", str(preds), "--labels", str(labels), "--metrics", str(metrics)]
    (preds / "predictions.csv").write_text("rep,unit,ite\n0,1,1.0\n0,2,inf\n")
    assert rt.evaluator_main(evaluate_effects, "test", argv) == 1 and not metrics.exists()
    assert capsys.readouterr().err == "1 predictions are NaN or infinite, e.g. rep 0 unit 2\n"
    (preds / "predictions.csv").write_text("rep,unit,ite\n0,2,2.0\n0,1,2.0\n")
    assert rt.evaluator_main(evaluate_effects, "test", argv) == 0
    assert json.loads(metrics.read_text())["metrics"] == {"pehe": 1.0, "ite_mae": 1.0, "ate_abs_error": 0.0}


def test_prompts_list_the_runtime_names_a_driver_imports() -> None:
    """An agent reading a driver sees what each imported runtime name does (agents/kit/runtime_api.py)."""
    from researchbench.agents.kit.runtime_api import runtime_api

    driver = "from task_runtime import read_params, DriverError\nfrom task_runtime.effects import pehe_scores\n"
    text = runtime_api([driver, "import numpy\n"])
    lines = text.splitlines()
    assert lines[0].startswith("task_runtime (the harness's read-only library")
    assert "read_params(path: Path) -> dict  # The JSON object of hyper-parameters in `path`;" in text
    assert any(line.startswith("class DriverError(Exception)  # A problem with the inputs") for line in lines)
    assert any(line.startswith("pehe_scores(merged: pd.DataFrame) -> dict[str, float]") for line in lines)
    assert len(lines) == 6  # title, fence, three names, fence: only what the files import
    assert runtime_api(["import numpy as np\n", "def broken(:\n"]) == ""
    assert len(runtime_api(["import task_runtime\n"]).splitlines()) == len(rt.__all__) + 3
