"""The domain_generalization task: data, driver, evaluator, and what cannot game it."""

from __future__ import annotations

import subprocess
import sys
from importlib import util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmark.tasks import workspace as ws
from benchmark.tasks.manifest import TaskSpec
from tests.task_harness import code_copy, load_evaluator, prepare_into, reproduce_seed, run_driver, spec_of

NAME = "domain_generalization"
FEATURES = [f"x{i}" for i in range(128)]


@pytest.fixture(scope="module")
def spec() -> TaskSpec:
    return spec_of(NAME)


@pytest.fixture(scope="module")
def prepared(spec: TaskSpec, tmp_path_factory: pytest.TempPathFactory) -> ws.PreparedTask:
    return prepare_into(spec, tmp_path_factory.mktemp("dg-ws"))


@pytest.fixture(scope="module")
def ev(spec: TaskSpec):
    return load_evaluator(spec)


@pytest.fixture(scope="module")
def channels(spec: TaskSpec):
    """Undo prepare's column order (the test knows it; agent code does not): (colour, grey image) per row."""
    module_spec = util.spec_from_file_location("dg_prepare", spec.task_dir / "prepare.py")
    prep = util.module_from_spec(module_spec)
    module_spec.loader.exec_module(prep)
    order = np.random.default_rng(prep.SEED).permutation(128)  # prepare's first draw

    def split(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        raw = np.empty((len(frame), 128))
        raw[:, order] = frame[FEATURES].to_numpy()
        colour = (raw[:, 64:].sum(1) > 0).astype(int)
        return colour, raw[:, :64] + raw[:, 64:]

    return split


def test_prepared_data_hides_targets_and_environments(prepared: ws.PreparedTask, spec: TaskSpec,
                                                                      tmp_path: Path, channels) -> None:
    train = pd.read_csv(prepared.public_dir / "train.csv")
    val = pd.read_csv(prepared.public_dir / "val_inputs.csv")
    assert list(val.columns) == ["id"] + FEATURES  # no env, no target
    assert list(pd.read_csv(prepared.test_inputs_dir / "test_inputs.csv").columns) == ["id"] + FEATURES
    # the construction does what the description says: colour predicts the observed label 90% / 80%
    colour, _ = channels(train)
    agree = [(colour == train["label"])[train["env"] == e].mean() for e in (0, 1)]
    assert agree[0] == pytest.approx(0.9, abs=0.04) and agree[1] == pytest.approx(0.8, abs=0.04)


def test_following_or_inverting_the_spurious_feature_does_not_beat_the_floor(prepared: ws.PreparedTask, spec: TaskSpec,
                                                                             ev, channels) -> None:
    test = pd.read_csv(prepared.test_inputs_dir / "test_inputs.csv")
    colour, grey = channels(test)
    for labels in (colour, 1 - colour):
        metrics = ev.evaluate_frame(pd.DataFrame({"id": test["id"], "label": labels}), prepared.labels_dir, "test")
        assert not spec.metric.better(metrics["worst_env_accuracy"], spec.metric.floor)


def test_a_colour_blind_model_clears_the_target(prepared: ws.PreparedTask, spec: TaskSpec, ev, channels) -> None:
    """The task is solvable: logistic regression on the grey image alone (the invariant feature)."""
    from sklearn.linear_model import LogisticRegression

    train = pd.read_csv(prepared.public_dir / "train.csv")
    test = pd.read_csv(prepared.test_inputs_dir / "test_inputs.csv")
    clf = LogisticRegression(C=0.1, max_iter=3000).fit(channels(train)[1] / 16, train["label"])
    pred = clf.predict(channels(test)[1] / 16)
    metrics = ev.evaluate_frame(pd.DataFrame({"id": test["id"], "label": pred}), prepared.labels_dir, "test")
    assert spec.metric.better(metrics["worst_env_accuracy"], spec.metric.target)


@pytest.fixture(scope="module")
def baseline_val(prepared: ws.PreparedTask, ev, tmp_path_factory: pytest.TempPathFactory) -> dict[str, float]:
    tmp = tmp_path_factory.mktemp("dg-baseline")
    result = run_driver(code_copy(prepared, tmp / "code"), "val", prepared, tmp / "out", seed=0)
    assert result.returncode == 0, result.stderr
    return ev.evaluate("val", tmp / "out", prepared.labels_dir)


@pytest.mark.slow
def test_baseline_val_matches_the_record(baseline_val: dict, spec: TaskSpec) -> None:
    assert spec.baseline is not None and spec.baseline.seeds[0] == 0
    assert baseline_val["worst_env_accuracy"] == pytest.approx(spec.baseline.val[0], abs=1e-9)
    assert baseline_val["accuracy_aligned"] > baseline_val["accuracy_flipped"]  # ERM leans on the spurious feature


def test_constant_overlay_scores_no_better_than_the_floor(prepared: ws.PreparedTask, spec: TaskSpec, ev,
                                                          tmp_path: Path) -> None:
    code = code_copy(prepared, tmp_path / "code", overlay=spec.task_dir / "checks" / "constant")
    result = run_driver(code, "test", prepared, tmp_path / "out")
    assert result.returncode == 0, result.stderr
    score = ev.evaluate("test", tmp_path / "out", prepared.labels_dir)["worst_env_accuracy"]
    assert not spec.metric.better(score, spec.metric.floor)
    test = pd.read_csv(prepared.labels_dir / "test.csv")
    best_constant = max(ev.score(test.assign(label=k))["worst_env_accuracy"] for k in (0, 1))
    assert spec.metric.floor == best_constant  # the floor is exactly the best constant's score


BATCH_DEPENDENT = """\
import numpy as np
def fit(x, y, env, params, device):
    return None
def predict(model, x):
    s = x.sum(axis=1)
    return (s > np.median(s)).astype(int)  # relative to the batch
"""


def test_driver_rejects_predictions_that_depend_on_the_batch(prepared: ws.PreparedTask, tmp_path: Path) -> None:
    code = code_copy(prepared, tmp_path / "code", {"model.py": BATCH_DEPENDENT})
    result = run_driver(code, "val", prepared, tmp_path / "out")
    assert result.returncode == 1 and "not a function of each row alone" in result.stderr, result.stderr


@pytest.mark.parametrize("breakage, reason", [
    (lambda f: f.iloc[1:], "missing"),
    (lambda f: pd.concat([f, f.iloc[:1]]), "duplicated"),
    (lambda f: f.assign(label=[2] + list(f["label"].iloc[1:])), "0 or 1"),
    (lambda f: f.assign(label=[np.nan] + list(f["label"].iloc[1:])), "must hold integers"),
    (lambda f: pd.concat([f, pd.DataFrame({"id": [10**6], "label": [0]})]), "unexpected"),
    (lambda f: f.drop(columns="label"), "lacks columns"),
    (None, "was not written"),
], ids=["missing-row", "duplicate", "not-binary", "nan", "extra-id", "no-label", "no-file"])
def test_evaluator_rejects_invalid_predictions(prepared: ws.PreparedTask, ev, tmp_path: Path, capsys, breakage,
                                               reason: str) -> None:
    if breakage is not None:
        key = pd.read_csv(prepared.labels_dir / "val.csv")
        breakage(pd.DataFrame({"id": key["id"], "label": key["target"]})).to_csv(tmp_path / "predictions.csv", index=False)
    metrics = tmp_path / "metrics.json"
    metrics.write_text('{"metrics": {"worst_env_accuracy": 1.0}}')
    code = ev.main(["--phase", "val", "--predictions-dir", str(tmp_path), "--labels", str(prepared.labels_dir),
                    "--metrics", str(metrics)])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1 and reason in err, err
    assert not metrics.exists()


@pytest.mark.slow
def test_prepare_is_byte_for_byte_deterministic(prepared: ws.PreparedTask, spec: TaskSpec, tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(spec.task_dir / "prepare.py"), "--out", str(tmp_path)], check=True)
    for folder in (spec.data.public, spec.data.test_inputs, spec.data.labels):
        written = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / folder).rglob("*") if p.is_file())
        assert written and written == sorted(p.relative_to(prepared.root).as_posix()
                                             for p in (prepared.root / folder).rglob("*") if p.is_file())
        for rel in written:
            assert (tmp_path / rel).read_bytes() == (prepared.root / rel).read_bytes(), rel


@pytest.mark.slow
def test_baseline_seed_reproduces_the_record(prepared: ws.PreparedTask, spec: TaskSpec, tmp_path: Path) -> None:
    val, test = reproduce_seed(prepared, tmp_path)
    assert spec.baseline is not None
    assert val == pytest.approx(spec.baseline.val[0], abs=1e-9) and test == pytest.approx(spec.baseline.test[0], abs=1e-9)
