"""The privacy task: the harness-owned driver owns DP-SGD and the accountant; the agent's recipe is
validated; a run over the budget predicts nothing; the evaluator on hostile input; the floor.

Phases run through the real sandbox and evaluator; the baseline's reproduction is slow-marked.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from task_testkit import (evaluate_ok, evaluator_module, overlay, prepare_task, rejects_inprocess, run_sandboxed,
                          task_dir, task_module)

NAME = "privacy"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    return prepare_task(NAME, tmp_path_factory.mktemp("priv-ws"))


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            h.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return h.hexdigest()


def _driver_module():
    spec = importlib.util.spec_from_file_location("privacy_driver", task_dir(NAME) / "baseline" / "driver.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_prepare_is_deterministic_and_splits_are_disjoint(prepared, tmp_path):
    privacy_prepare = task_module(NAME, "prepare")

    privacy_prepare.main(["--out", str(tmp_path / "again")])
    for part in ("public", "test_inputs", "labels"):
        assert _digest(tmp_path / "again" / part) == _digest(prepared.root / part)
    frames = [pd.read_csv(prepared.public_dir / "train.csv"), pd.read_csv(prepared.public_dir / "val_inputs.csv"),
              pd.read_csv(prepared.test_inputs_dir / "test_inputs.csv")]
    assert [len(f) for f in frames] == [1078, 359, 360]
    assert "label" in frames[0].columns and not any("label" in f.columns for f in frames[1:])
    ids = [set(f["id"]) for f in frames]
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])


def test_floor_is_the_majority_digit_and_the_untrained_overlay_does_not_beat_it(prepared, tmp_path):
    spec = prepared.spec
    labels = pd.read_csv(prepared.labels_dir / "test_labels.csv")
    assert spec.metric.floor == pytest.approx(labels["label"].value_counts(normalize=True).max())
    outcome, _ = run_sandboxed(prepared, overlay(spec, "checks/untrained"), "test", tmp_path)
    assert outcome.ok, outcome.bug_reason
    assert not spec.metric.better(outcome.primary, spec.metric.floor)


@pytest.mark.parametrize("recipe, reason", [
    ({"epsilon": 100.0}, "unknown key 'epsilon'"),
    ({"noise_multiplier": 0.0}, "unknown key 'noise_multiplier'"),
    ({"epochs": 1000}, "epochs=1000 is not allowed"),
    ({"batch_size": 5000}, "batch_size=5000 is not allowed"),
    ({"max_grad_norm": 0}, "max_grad_norm=0.0 is not allowed"),
    ({"hidden": [100000]}, "hidden=[100000] is not allowed"),
    ({"lr": True}, "lr=True is not allowed"),
    ("[1, 2]", "must hold a JSON object"),
    ("{oops", "not valid JSON"),
], ids=["epsilon", "noise", "epochs", "batch", "clip", "width", "bool", "list", "json"])
def test_the_recipe_cannot_touch_the_privacy_parameters(recipe, reason, tmp_path):
    """Validation is strict and happens before any data is read: an out-of-range or unknown key fails."""
    driver = _driver_module()
    path = tmp_path / "recipe.json"
    path.write_text(recipe if isinstance(recipe, str) else json.dumps(recipe))
    with pytest.raises(driver.DriverError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        driver.read_recipe(path)


def test_only_the_recipe_is_editable(prepared, tmp_path):
    """Agent code cannot be placed next to the data: the harness refuses to write any other file."""
    assert prepared.spec.editable == ("recipe.json",)
    from benchmark.experiment import materialize

    for rel in ("driver.py", "model.py", "sitecustomize.py"):
        with pytest.raises(ValueError, match="non-editable"):
            materialize(prepared, {rel: "print('hi')"}, tmp_path / "code")


def test_training_is_accounted_and_a_run_over_budget_predicts_nothing(prepared, tmp_path, monkeypatch):
    """A cheap recipe trains within the budget (the accountant's epsilon <= 3, calibrated noise > 0);
    when the accountant reports more than the budget, the driver refuses and writes no predictions."""
    driver = _driver_module()
    train = pd.read_csv(prepared.public_dir / "train.csv")
    x, y = train[[f"p{i}" for i in range(64)]].to_numpy(np.float32), train["label"].to_numpy()
    recipe = driver.read_recipe(_write(tmp_path / "r.json", {"epochs": 2, "batch_size": 256, "lr": 1.0}))
    _, report = driver.train_private(recipe, x, y, seed=0)
    assert report["epsilon_spent"] <= driver.EPSILON and report["noise_multiplier"] > 1.0
    assert report["steps"] >= 4 and report["sample_rate"] == pytest.approx(1 / 5)  # opacus: 1 / ceil(1078 / 256)

    from opacus import PrivacyEngine

    monkeypatch.setattr(PrivacyEngine, "get_epsilon", lambda self, delta: driver.EPSILON + 0.01)
    with pytest.raises(driver.DriverError, match="refusing to predict"):
        driver.train_private(recipe, x, y, seed=0)


def _write(path: Path, payload: dict) -> Path:
    path.write_text(json.dumps(payload))
    return path


@pytest.mark.parametrize("content, reason", [
    ("id,label\n1,0\n1,0\n", "duplicated"),
    ("id,label\n1,10\n", "digits 0..9"),
    ("id,label\n1,-1\n", "digits 0..9"),
    ("id,label\n1,0.5\n", "integers"),
    ("id,label\n1,nan\n", "integers"),
    ("id,digit\n1,0\n", "lacks columns"),
    ("\x00\xff garbage", None),
    (None, "was not written"),
], ids=["duplicate", "ten", "negative", "float", "nan", "bad-columns", "binary", "no-file"])
def test_evaluator_rejects_hostile_predictions(prepared, tmp_path, content, reason, capsys):
    preds = tmp_path / "preds"
    preds.mkdir()
    if content is not None:
        (preds / "predictions.csv").write_text(content)
    line = rejects_inprocess(evaluator_module(prepared.spec), "val", preds, prepared.labels_dir, tmp_path, capsys)
    assert reason is None or reason in line, line


def test_evaluator_scores_known_predictions(prepared, tmp_path):
    labels = pd.read_csv(prepared.labels_dir / "val_labels.csv")
    pred = labels["label"].to_numpy().copy()
    pred[:36] = (pred[:36] + 1) % 10
    preds = tmp_path / "preds"
    preds.mkdir()
    pd.DataFrame({"id": labels["id"], "label": pred}).sample(frac=1, random_state=0).to_csv(
        preds / "predictions.csv", index=False)
    metrics = evaluate_ok(prepared.spec, "val", preds, prepared.labels_dir, tmp_path)
    assert metrics["accuracy"] == pytest.approx(1 - 36 / len(labels))


@pytest.mark.slow
def test_baseline_reproduces_its_recorded_seed(prepared, tmp_path):
    spec = prepared.spec
    seed = spec.baseline.seeds[0]
    for phase, recorded in (("val", spec.baseline.val[0]), ("test", spec.baseline.test[0])):
        outcome, _ = run_sandboxed(prepared, {}, phase, tmp_path, seed=seed)
        assert outcome.ok, outcome.bug_reason
        assert outcome.primary == pytest.approx(recorded, rel=1e-9)
        assert spec.metric.better(outcome.primary, spec.metric.floor)
