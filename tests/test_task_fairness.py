"""The fairness task: prepare, the accuracy floor (same rule on val and test), trivial predictors, the
evaluator on hostile input, and that the val phase cannot reach the labels.

Phases run through the real sandbox and evaluator; the baseline's reproduction is slow-marked.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from task_testkit import (evaluate_ok, evaluator_module, overlay, prepare_task, rejects_inprocess, run_sandboxed,
                          searcher, task_dir, task_module)

NAME = "fairness"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    return prepare_task(NAME, tmp_path_factory.mktemp("fair-ws"))


@pytest.fixture(scope="module")
def evaluator(prepared):
    return evaluator_module(prepared.spec)


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            h.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return h.hexdigest()


def test_prepare_is_deterministic_and_splits_are_disjoint(prepared, tmp_path):
    fair_prepare = task_module(NAME, "prepare")

    fair_prepare.main(["--out", str(tmp_path / "again")])
    for part in ("public", "test_inputs", "labels"):
        assert _digest(tmp_path / "again" / part) == _digest(prepared.root / part)
    train = pd.read_csv(prepared.public_dir / "train.csv")
    val = pd.read_csv(prepared.public_dir / "val_inputs.csv")
    test = pd.read_csv(prepared.test_inputs_dir / "test_inputs.csv")
    assert "y" in train.columns and "y" not in val.columns and "y" not in test.columns
    ids = [set(f["id"]) for f in (train, val, test)]
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2]) and sum(map(len, ids)) == 6366


def _predictions(tmp_path: Path, ids, pred) -> Path:
    folder = tmp_path / "preds"
    folder.mkdir(exist_ok=True)
    pd.DataFrame({"id": ids, "pred": pred}).to_csv(folder / "predictions.csv", index=False)
    return folder


@pytest.mark.parametrize("phase", ["val", "test"])
def test_the_accuracy_floor_is_the_same_rule_on_val_and_test(prepared, tmp_path, phase):
    """The perfect predictor scores 0; flipping labels just past the floor turns the score to the worst
    value (1.0) even though its parity is better; the rule's threshold is the evaluator's one constant."""
    spec = prepared.spec
    labels = pd.read_csv(prepared.labels_dir / f"{phase}_labels.csv")
    metrics = evaluate_ok(spec, phase, _predictions(tmp_path, labels["id"], labels["y"]), prepared.labels_dir, tmp_path)
    assert metrics["accuracy"] == 1.0 and metrics["dpd_at_floor"] == metrics["dpd"] > 0
    floor = evaluator_module(spec).ACCURACY_FLOOR
    n_wrong = int(np.floor((1 - floor) * len(labels))) + 1  # one error too many
    pred = labels["y"].to_numpy().copy()
    pred[:n_wrong] = 1 - pred[:n_wrong]
    metrics = evaluate_ok(spec, phase, _predictions(tmp_path, labels["id"], pred), prepared.labels_dir, tmp_path)
    assert metrics["accuracy"] < floor and metrics["meets_floor"] == 0.0 and metrics["dpd_at_floor"] == 1.0
    assert "0.70" in (task_dir(NAME) / "description.md").read_text() and floor == 0.70


@pytest.mark.parametrize("kind", ["all-zero", "all-one", "random-half"])
def test_label_blind_predictors_cannot_win(prepared, tmp_path, kind):
    """Constant and random predictors have parity ~0 but fail the accuracy floor: the worst score."""
    spec = prepared.spec
    labels = pd.read_csv(prepared.labels_dir / "test_labels.csv")
    pred = {"all-zero": np.zeros(len(labels)), "all-one": np.ones(len(labels)),
            "random-half": np.random.default_rng(0).integers(0, 2, len(labels))}[kind].astype(int)
    metrics = evaluate_ok(spec, "test", _predictions(tmp_path, labels["id"], pred), prepared.labels_dir, tmp_path)
    assert metrics["dpd_at_floor"] == 1.0
    assert not spec.metric.better(metrics["dpd_at_floor"], spec.metric.floor)


def test_trivial_overlays_score_no_better_than_the_floor(prepared, tmp_path):
    """Run for real: the majority-label overlay scores 1.0; the unaware model scores exactly the floor."""
    spec = prepared.spec
    assert spec.checks.trivial == ("checks/constant",)
    scores = {}
    for folder in ("checks/constant", "checks/unaware"):
        outcome, _ = run_sandboxed(prepared, overlay(spec, folder), "test", tmp_path / Path(folder).name)
        assert outcome.ok, outcome.bug_reason
        scores[folder] = outcome.primary
        assert not spec.metric.better(outcome.primary, spec.metric.floor)
    assert scores["checks/constant"] == 1.0
    assert scores["checks/unaware"] == pytest.approx(spec.metric.floor, rel=1e-9)


@pytest.mark.parametrize("content, reason", [
    ("id,pred\n1,0\n1,0\n", "duplicated"),
    ("id,pred\n1,2\n", "only 0 or 1"),
    ("id,pred\n1,0.5\n", "only 0 or 1"),
    ("id,pred\n1,nan\n", "only 0 or 1"),
    ("id,pred\n1.5,0\n", "integers"),
    ("id,score\n1,0\n", "lacks columns"),
    ("\x00\xff garbage", None),
    (None, "was not written"),
], ids=["duplicate", "two", "float", "nan", "float-id", "bad-columns", "binary", "no-file"])
def test_evaluator_rejects_hostile_predictions(prepared, evaluator, tmp_path, content, reason, capsys):
    preds = tmp_path / "preds"
    preds.mkdir()
    if content is not None:
        (preds / "predictions.csv").write_text(content)
    line = rejects_inprocess(evaluator, "val", preds, prepared.labels_dir, tmp_path, capsys)
    assert reason is None or reason in line, line


def test_evaluator_rejects_missing_and_foreign_ids(prepared, evaluator, tmp_path, capsys):
    labels = pd.read_csv(prepared.labels_dir / "val_labels.csv")
    _predictions(tmp_path, labels["id"].iloc[1:], labels["y"].iloc[1:])
    assert "missing" in rejects_inprocess(evaluator, "val", tmp_path / "preds", prepared.labels_dir, tmp_path, capsys)
    test_ids = pd.read_csv(prepared.labels_dir / "test_labels.csv")["id"]  # test rows do not pass for val
    _predictions(tmp_path, test_ids, np.zeros(len(test_ids), dtype=int))
    assert "ids" in rejects_inprocess(evaluator, "val", tmp_path / "preds", prepared.labels_dir, tmp_path, capsys)


def test_val_phase_cannot_reach_the_labels(prepared, tmp_path):
    """A hostile model.py searches the sandbox for the label files and the evaluator in the val phase."""
    probe = searcher(needles=["demographic parity under an accuracy floor", "ACCURACY_FLOOR ="],
                     names=["val_labels.csv", "test_labels.csv", "test_inputs.csv"])
    model = probe + "\nimport numpy as np\ndef fit_predict(train, inputs, params):\n    return np.zeros(len(inputs))\n"
    outcome, sandboxed = run_sandboxed(prepared, {"model.py": model}, "val", tmp_path)
    assert outcome.ok, outcome.bug_reason
    stdout = outcome.stdout.decode()
    assert "SEARCH DONE" in stdout and outcome.primary == 1.0
    if not sandboxed:
        pytest.skip("without bwrap the host filesystem is visible; the sandbox is what hides the labels")
    assert "FOUND" not in stdout, stdout


@pytest.mark.slow
def test_baseline_reproduces_its_recorded_seed(prepared, tmp_path):
    spec = prepared.spec
    seed = spec.baseline.seeds[1]
    for phase, recorded in (("val", spec.baseline.val[1]), ("test", spec.baseline.test[1])):
        outcome, _ = run_sandboxed(prepared, {}, phase, tmp_path, seed=seed)
        assert outcome.ok, outcome.bug_reason
        assert outcome.primary == pytest.approx(recorded, rel=1e-9)
        assert spec.metric.better(outcome.primary, spec.metric.floor)
