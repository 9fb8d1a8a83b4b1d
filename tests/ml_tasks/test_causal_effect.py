"""The causal_effect task's own checks: its manifest, surfaces that differ per replication and stay out of the
public data, the floor is the oracle constant, the evaluator's PEHE and value rules, and a search of the val
sandbox for the hidden surfaces. The checks every task gets: tests/ml_tasks/test_tasks.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from task_kit import (assert_search_found_nothing, data_digest, evaluate_ok, overlay_run, prepared, rejects_inprocess,
                      run_sandboxed, searcher, task_module)

TASK = "causal_effect"
ce_prepare = task_module(TASK, "prepare")  # the task's own prepare module, for its constants


def test_manifest_loads(prepared):
    spec = prepared.spec
    assert spec.name == TASK and spec.metric.name == "pehe" and not spec.metric.higher_is_better
    assert spec.metric.best_possible == 0.0 < spec.metric.target < spec.metric.floor
    assert "--seed" in spec.phases["val"] and "{seed}" in spec.phases["val"]


def test_prepare_is_deterministic_and_public_data_hold_no_effects(prepared, tmp_path):
    ce_prepare.main(["--out", str(tmp_path / "again")])
    assert data_digest(tmp_path / "again") == data_digest(prepared.root)
    train = pd.read_csv(prepared.public_dir / "train.csv")
    val = pd.read_csv(prepared.public_dir / "val_inputs.csv")
    covariates = [f"x{j}" for j in range(20)]
    assert list(train.columns) == ["rep", "unit", *covariates, "t", "y"]
    assert list(val.columns) == ["rep", "unit", *covariates]
    assert sorted(p.name for p in prepared.public_dir.rglob("*") if p.is_file()) == ["train.csv", "val_inputs.csv"]
    assert train["rep"].nunique() == ce_prepare.N_REPLICATIONS and len(train) == 600 * ce_prepare.N_REPLICATIONS
    # every replication has a different surface: the true effects differ between replications
    ite = pd.read_csv(prepared.labels_dir / "val_ite.csv").pivot(index="unit", columns="rep", values="ite")
    assert np.abs(np.corrcoef(ite.to_numpy().T)[np.triu_indices(ce_prepare.N_REPLICATIONS, 1)]).max() < 0.95
    # treatment is confounded: the treated differ from the controls in their covariates
    gaps = [np.abs(g[g.t == 1][covariates].mean() - g[g.t == 0][covariates].mean()).max() for _, g in train.groupby("rep")]
    assert min(gaps) > 0.3


def test_the_recorded_true_terms_span_each_effect_surface(prepared):
    """benchmarks/oracle_causal_effect.py's 1.0 rests on this: draw_replication's recorded terms (drawing nothing
    more than prepare does) rebuild each replication's true effects exactly, with an intercept."""
    cov_seq, _, _, *rep_seqs = np.random.SeedSequence(ce_prepare.SURFACE_ENTROPY).spawn(3 + ce_prepare.N_REPLICATIONS)
    x = ce_prepare.simulate_covariates(np.random.default_rng(cov_seq))
    for seq in rep_seqs[:3]:
        t, y, tau = ce_prepare.draw_replication(np.random.default_rng(seq), x)
        terms: dict[str, list] = {}
        t2, y2, tau2 = ce_prepare.draw_replication(np.random.default_rng(seq), x, terms)
        assert np.array_equal(t, t2) and np.array_equal(y, y2) and np.array_equal(tau, tau2)
        assert 2 <= len(terms["tau"]) <= 4 and 4 <= len(terms["mu0"]) <= 7
        span = np.column_stack([np.ones(len(x))] + [v for _, v in terms["tau"]])
        coef, *_ = np.linalg.lstsq(span, tau, rcond=None)
        assert np.abs(span @ coef - tau).max() < 1e-8


def test_floor_is_the_oracle_constant_and_no_constant_beats_it(prepared, tmp_path):
    """The floor is the mean std of the true test effects; the trivial overlay, run for real in the
    sandbox, and the oracle constant itself through the real evaluator score no better."""
    spec = prepared.spec
    labels = pd.read_csv(prepared.labels_dir / "test_ite.csv")
    assert spec.metric.floor == pytest.approx(labels.groupby("rep")["ite"].std(ddof=0).mean(), rel=1e-9)
    preds = tmp_path / "preds"
    preds.mkdir()
    labels.assign(ite=labels.groupby("rep")["ite"].transform("mean")).to_csv(preds / "predictions.csv", index=False)
    oracle = evaluate_ok(spec, "test", preds, prepared.labels_dir, tmp_path)["pehe"]
    assert oracle == pytest.approx(spec.metric.floor, rel=1e-6)
    outcome = overlay_run(TASK, "checks/constant", "test").outcome
    assert outcome.ok, outcome.bug_reason
    assert not spec.metric.better(outcome.primary, spec.metric.floor)


def test_evaluator_scores_the_truth_zero(prepared, tmp_path):
    preds = tmp_path / "preds"
    preds.mkdir()
    pd.read_csv(prepared.labels_dir / "val_ite.csv").to_csv(preds / "predictions.csv", index=False)
    metrics = evaluate_ok(prepared.spec, "val", preds, prepared.labels_dir, tmp_path)
    assert metrics == {"pehe": 0.0, "ite_mae": 0.0, "ate_abs_error": 0.0}


def _valid_rows(prepared, n: int = 3) -> pd.DataFrame:
    return pd.read_csv(prepared.labels_dir / "val_ite.csv").assign(ite=0.5)


@pytest.mark.parametrize("mutation, reason", [
    ("inf", "NaN or infinite"),
    ("text", "not numbers"),
    ("float-id", "integers"),
    ("columns", "lacks columns"),
])
def test_evaluator_rejects_malformed_predictions(prepared, tmp_path, mutation, reason, capsys):
    """Beyond tests/ml_tasks/test_tasks.py's hostile cases (no file, binary, NaN, foreign, duplicated, missing rows)."""
    preds = tmp_path / "preds"
    preds.mkdir()
    frame = _valid_rows(prepared).astype({"ite": object})
    if mutation == "inf":
        frame.loc[3, "ite"] = float("inf")
    elif mutation == "text":
        frame.loc[2, "ite"] = "abc"
    elif mutation == "float-id":
        frame = frame.astype({"unit": float})
        frame.loc[0, "unit"] = 0.5
    elif mutation == "columns":
        frame = frame.rename(columns={"ite": "effect"})
    frame.to_csv(preds / "predictions.csv", index=False)
    line = rejects_inprocess(task_module(TASK), "val", preds, prepared.labels_dir, tmp_path, capsys)
    assert reason in line, line


def test_val_phase_cannot_reach_the_hidden_surfaces(prepared, tmp_path):
    """A hostile model.py searches the sandbox for the label files, the evaluator and the surface
    entropy, in the val phase; in the bwrap sandbox it finds nothing, and it still returns effects."""
    entropy = f"{ce_prepare.SURFACE_ENTROPY:X}"
    first_truth = pd.read_csv(prepared.labels_dir / "val_ite.csv")["ite"].iloc[0]
    probe = searcher(needles=["SURFACE_ENTROPY", entropy[:12], str(ce_prepare.SURFACE_ENTROPY),
                              "rep,unit,ite\n", f"{first_truth:.10g}"],
                     names=["val_ite.csv", "test_ite.csv", "test_inputs.csv"])
    model = probe + "\nimport numpy as np\ndef estimate_ite(train, inputs, params):\n    return np.zeros(len(inputs))\n"
    assert_search_found_nothing(run_sandboxed(prepared, {"model.py": model}, "val", tmp_path))
