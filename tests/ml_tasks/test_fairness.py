"""The fairness task's own checks: the splits, the parity charge (same rule on val and test, smooth past the
tolerance), what trivial and label-blind predictors score, its evaluator's value rules, and a search of the val
sandbox for the labels.
The checks every task gets (record, floor, hostile predictions, reference): tests/ml_tasks/test_tasks.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from task_kit import (assert_search_found_nothing, data_digest, ev, evaluate_ok, overlay_run, prepared,
                      rejects_inprocess, run_sandboxed, searcher, task_dir, task_module)

TASK = "fairness"


def test_prepare_is_deterministic_and_splits_are_disjoint(prepared, tmp_path):
    fair_prepare = task_module(TASK, "prepare")

    fair_prepare.main(["--out", str(tmp_path / "again")])
    assert data_digest(tmp_path / "again") == data_digest(prepared.root)
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


def _quota(labels: pd.DataFrame, score: np.ndarray, rate: float) -> np.ndarray:
    """Select the top `rate` share of each group by `score`: equal positive rates up to rounding."""
    pred = np.zeros(len(labels), dtype=int)
    for g in (0, 1):
        rows = np.flatnonzero(labels["a"].to_numpy() == g)
        pred[rows[np.argsort(-score[rows], kind="stable")[:int(round(rate * len(rows)))]]] = 1
    return pred


@pytest.mark.parametrize("phase", ["val", "test"])
def test_the_parity_charge_is_the_same_smooth_rule_on_val_and_test(prepared, tmp_path, phase):
    """Equal quotas per group score their accuracy; past the tolerance each point of gap costs three points of
    accuracy, so a decision set a person or two past it loses a little, not everything (2.x scored it 0); the
    perfect predictor is accurate but unequal (base rates differ) and pays for its whole gap past the tolerance."""
    spec = prepared.spec
    evaluator = task_module(TASK)
    labels = pd.read_csv(prepared.labels_dir / f"{phase}_labels.csv")
    y, a = labels["y"].to_numpy(), labels["a"].to_numpy()
    n0, n1 = int((a == 0).sum()), int((a == 1).sum())
    tolerance = 1 / (2 * n0) + 1 / (2 * n1)  # the largest gap equal quotas can leave: rounding to whole people
    assert (n0, n1) == {"val": (774, 499), "test": (774, 499)}[phase] and round(tolerance, 4) == 0.0016
    assert "0.0016" in (task_dir(TASK) / "description.md").read_text()

    def scored(pred: np.ndarray) -> dict[str, float]:
        return evaluate_ok(spec, phase, _predictions(tmp_path, labels["id"], pred), prepared.labels_dir, tmp_path)

    fair = _quota(labels, y + 0.01 * np.arange(len(y)) / len(y), 0.3)  # the true positives first
    metrics = scored(fair)
    assert metrics["tolerance"] == pytest.approx(tolerance, rel=1e-12)
    assert metrics["dpd"] <= tolerance and metrics["meets_parity"] == 1.0 and metrics["parity_penalty"] == 0.0
    assert metrics["accuracy_at_parity"] == metrics["accuracy"] > 0.8
    older = np.flatnonzero((a == 1) & (fair == 0))
    past = int(np.ceil((tolerance - metrics["dpd"]) * n1)) + 1  # the older group's rate just past the tolerance
    near_miss = fair.copy()
    near_miss[older[:past]] = 1
    metrics = scored(near_miss)
    assert tolerance < metrics["dpd"] < tolerance + 2 / n1 and metrics["meets_parity"] == 0.0
    assert metrics["parity_penalty"] == pytest.approx(3 * (metrics["dpd"] - tolerance), abs=1e-12)
    assert metrics["accuracy_at_parity"] == pytest.approx(metrics["accuracy"] - metrics["parity_penalty"], abs=1e-12)
    assert metrics["accuracy_at_parity"] > metrics["accuracy"] - 3 * 2 / n1 > 0.8
    metrics = scored(y)
    assert metrics["accuracy"] == 1.0 and metrics["dpd"] > 0.05
    assert metrics["accuracy_at_parity"] == pytest.approx(1.0 - 3 * (metrics["dpd"] - tolerance), abs=1e-12)
    assert metrics["accuracy_at_parity"] < spec.metric.best_possible  # the best decisions the rule allows score more
    assert evaluator.PENALTY == 3.0


def test_the_score_never_goes_below_zero(prepared, tmp_path):
    """Every decision wrong, and the groups' rates apart by the base-rate gap: the charge stops at 0, the worst value."""
    labels = pd.read_csv(prepared.labels_dir / "test_labels.csv")
    metrics = evaluate_ok(prepared.spec, "test", _predictions(tmp_path, labels["id"], 1 - labels["y"].to_numpy()),
                          prepared.labels_dir, tmp_path)
    assert metrics["accuracy"] == 0.0 and metrics["parity_penalty"] > 0.1 and metrics["accuracy_at_parity"] == 0.0


@pytest.mark.parametrize("kind", ["all-zero", "all-one", "random-half"])
def test_label_blind_predictors_cannot_beat_the_floor(prepared, tmp_path, kind):
    """Constant predictors pass the audit with at most the majority-label accuracy; a random one
    misses it or scores about 0.5."""
    spec = prepared.spec
    labels = pd.read_csv(prepared.labels_dir / "test_labels.csv")
    pred = {"all-zero": np.zeros(len(labels)), "all-one": np.ones(len(labels)),
            "random-half": np.random.default_rng(0).integers(0, 2, len(labels))}[kind].astype(int)
    metrics = evaluate_ok(spec, "test", _predictions(tmp_path, labels["id"], pred), prepared.labels_dir, tmp_path)
    assert not spec.metric.better(metrics["accuracy_at_parity"], spec.metric.floor)


@pytest.mark.parametrize("phase", ["val", pytest.param("test", marks=pytest.mark.slow)])
def test_trivial_overlays_score_as_documented(prepared, phase):
    """Run for real: the majority-label overlay scores the floor (up to the phases' base rates); the fairness-unaware model is more accurate
    than the majority label but pays for its parity gap (0.04-0.07: 0.12-0.19 of accuracy) and lands well below
    the floor (tests/ml_tasks/test_tasks.py checks both stay at or below it)."""
    spec = prepared.spec
    assert spec.checks.trivial == ("checks/constant", "checks/unaware")
    unaware = overlay_run(TASK, "checks/unaware", phase).outcome
    assert unaware.ok and unaware.primary < spec.metric.floor - 0.05, (unaware.bug_reason, unaware.primary)
    assert unaware.metrics["parity_penalty"] > 0.1 and unaware.metrics["accuracy"] > spec.metric.floor
    constant = overlay_run(TASK, "checks/constant", phase).outcome
    # the floor is the majority label's score on the phase where it is higher (5.0.0: test), so neither beats it
    assert constant.primary <= spec.metric.floor and constant.primary == pytest.approx(spec.metric.floor, abs=2e-3)


@pytest.mark.parametrize("content, reason", [
    ("id,pred\n1,2\n", "only 0 or 1"),
    ("id,pred\n1,0.5\n", "only 0 or 1"),
    ("id,pred\n1.5,0\n", "integers"),
    ("id,score\n1,0\n", "lacks columns"),
], ids=["two", "float", "float-id", "bad-columns"])
def test_evaluator_accepts_only_decisions(prepared, ev, tmp_path, content, reason, capsys):
    preds = tmp_path / "preds"
    preds.mkdir()
    (preds / "predictions.csv").write_text(content)
    line = rejects_inprocess(ev, "val", preds, prepared.labels_dir, tmp_path, capsys)
    assert reason in line, line


def test_test_rows_do_not_pass_for_val(prepared, ev, tmp_path, capsys):
    test_ids = pd.read_csv(prepared.labels_dir / "test_labels.csv")["id"]
    _predictions(tmp_path, test_ids, np.zeros(len(test_ids), dtype=int))
    assert "ids" in rejects_inprocess(ev, "val", tmp_path / "preds", prepared.labels_dir, tmp_path, capsys)


def test_val_phase_cannot_reach_the_labels(prepared, tmp_path):
    """A hostile model.py searches the sandbox for the label files and the evaluator in the val phase."""
    probe = searcher(needles=["charged for the parity gap of the decisions", "PENALTY = 3.0"],
                     names=["val_labels.csv", "test_labels.csv", "test_inputs.csv"])
    model = probe + "\nimport numpy as np\ndef fit_predict(train, inputs, params):\n    return np.zeros(len(inputs))\n"
    run = run_sandboxed(prepared, {"model.py": model}, "val", tmp_path)
    # the all-zero decisions: the majority label's val score, within 2e-3 of the floor (test's, the higher)
    assert run.outcome.primary == pytest.approx(prepared.spec.metric.floor, abs=2e-3), run.outcome.bug_reason
    assert_search_found_nothing(run)
