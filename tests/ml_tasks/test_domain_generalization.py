"""The domain_generalization task's own checks: the spurious construction, what cannot game it, the driver's
per-row rule and the evaluator's label rules. The checks every task gets: tests/ml_tasks/test_tasks.py."""

from __future__ import annotations

from importlib import util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from researchbench.benchmark.tasks import workspace as ws
from researchbench.benchmark.tasks.manifest import TaskSpec
from task_kit import baseline_run, driver_rejects, ev, prepared, rejects_inprocess, spec

TASK = "domain_generalization"


@pytest.fixture(scope="module")
def prep(spec: TaskSpec):
    module_spec = util.spec_from_file_location("dg_prepare", spec.task_dir / "prepare.py")
    module = util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def channels(prep):
    """Undo prepare's column order (the test knows it; agent code does not): (colour, grey canvas) per row."""
    order = np.random.default_rng(prep.SEED).permutation(2 * prep.PIXELS)  # prepare's first draw

    def split(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        raw = np.empty((len(frame), 2 * prep.PIXELS))
        raw[:, order] = frame[prep.FEATURES].to_numpy()
        colour = (raw[:, prep.PIXELS:].sum(1) > 0).astype(int)
        return colour, raw[:, :prep.PIXELS] + raw[:, prep.PIXELS:]

    return split


def test_prepared_data_hides_targets_and_environments(prepared: ws.PreparedTask, prep, channels) -> None:
    train = pd.read_csv(prepared.public_dir / "train.csv")
    val = pd.read_csv(prepared.public_dir / "val_inputs.csv")
    assert list(val.columns) == ["id"] + prep.FEATURES  # no env, no target
    assert list(pd.read_csv(prepared.test_inputs_dir / "test_inputs.csv").columns) == ["id"] + prep.FEATURES
    # the construction does what the description says: colour predicts the observed label 90% / 75%, the
    # brightness (full strokes reach 16, dimmed ones 9) 70% / 85%
    colour, grey = channels(train)
    bright = (grey.max(axis=1) == 16).astype(int)
    agree = [(colour == train["label"])[train["env"] == e].mean() for e in (0, 1)]
    assert agree[0] == pytest.approx(0.9, abs=0.04) and agree[1] == pytest.approx(0.75, abs=0.04)
    agree = [(bright == train["label"])[train["env"] == e].mean() for e in (0, 1)]
    assert agree[0] == pytest.approx(0.7, abs=0.04) and agree[1] == pytest.approx(0.85, abs=0.04)


def test_the_oracle_replay_matches_the_files(prepared: ws.PreparedTask, prep) -> None:
    """benchmarks/oracle_domain_generalization.py replays generate(): it must be what build wrote."""
    tables, _ = prep.generate()
    for phase, path in (("val", prepared.public_dir / "val_inputs.csv"),
                        ("test", prepared.test_inputs_dir / "test_inputs.csv")):
        stored = pd.read_csv(path)
        replayed = tables[phase].set_index("id").loc[stored["id"]]
        assert np.array_equal(replayed[prep.FEATURES].to_numpy(), stored[prep.FEATURES].to_numpy())


def test_following_or_inverting_a_spurious_feature_does_not_beat_the_floor(prepared: ws.PreparedTask, spec: TaskSpec,
                                                                           ev, channels) -> None:
    test = pd.read_csv(prepared.test_inputs_dir / "test_inputs.csv")
    colour, grey = channels(test)
    bright = (grey.max(axis=1) == 16).astype(int)
    for labels in (colour, 1 - colour, bright, 1 - bright):
        metrics = ev.evaluate_frame(pd.DataFrame({"id": test["id"], "label": labels}), prepared.labels_dir, "test")
        assert not spec.metric.better(metrics["worst_env_accuracy"], spec.metric.floor)


def test_a_colour_and_brightness_blind_model_learns_the_shape(prepared: ws.PreparedTask, spec: TaskSpec, ev,
                                                              channels) -> None:
    """The task is solvable from the noisy labels: an RBF SVM on the grey canvas scaled to its brightest
    pixel (blind to both spurious features) clears 0.75, past half of the scale up to the oracle's 1.0."""
    from sklearn.svm import SVC

    def blind(frame: pd.DataFrame) -> np.ndarray:
        grey = channels(frame)[1]
        return grey / np.maximum(grey.max(axis=1, keepdims=True), 1)

    train = pd.read_csv(prepared.public_dir / "train.csv")
    test = pd.read_csv(prepared.test_inputs_dir / "test_inputs.csv")
    pred = SVC(C=3).fit(blind(train), train["label"]).predict(blind(test))
    metrics = ev.evaluate_frame(pd.DataFrame({"id": test["id"], "label": pred}), prepared.labels_dir, "test")
    assert metrics["worst_env_accuracy"] > 0.75 and spec.metric.normalized(metrics["worst_env_accuracy"]) > 0.5


def test_the_baseline_leans_on_the_spurious_feature() -> None:
    metrics = baseline_run(TASK).outcome.metrics  # ERM: right where colour agrees with the label, wrong where not
    assert metrics["accuracy_aligned"] > metrics["accuracy_flipped"]


def test_floor_is_the_best_constant(prepared: ws.PreparedTask, spec: TaskSpec, ev) -> None:
    test = pd.read_csv(prepared.labels_dir / "test.csv")
    best_constant = max(ev.score(test.assign(label=k))["worst_env_accuracy"] for k in (0, 1))
    assert spec.metric.floor == best_constant


BATCH_DEPENDENT = """\
import numpy as np
def fit(x, y, env, params, device):
    return None
def predict(model, x):
    s = x.sum(axis=1)
    return (s > np.median(s)).astype(int)  # relative to the batch
"""


def test_driver_rejects_predictions_that_depend_on_the_batch(prepared: ws.PreparedTask, tmp_path: Path) -> None:
    driver_rejects(prepared, tmp_path, {"model.py": BATCH_DEPENDENT}, "not a function of each row alone")


@pytest.mark.parametrize("breakage, reason", [
    (lambda f: f.assign(label=[2] + list(f["label"].iloc[1:])), "0 or 1"),
    (lambda f: f.drop(columns="label"), "lacks columns"),
], ids=["not-binary", "no-label"])
def test_evaluator_rejects_invalid_predictions(prepared: ws.PreparedTask, ev, tmp_path: Path, capsys, breakage,
                                               reason: str) -> None:
    """Beyond tests/ml_tasks/test_tasks.py's hostile cases (no file, binary, NaN, foreign, duplicated, missing rows)."""
    key = pd.read_csv(prepared.labels_dir / "val.csv")
    breakage(pd.DataFrame({"id": key["id"], "label": key["target"]})).to_csv(tmp_path / "predictions.csv", index=False)
    line = rejects_inprocess(ev, "val", tmp_path, prepared.labels_dir, tmp_path, capsys)
    assert reason in line, line


def test_the_gpu_scale_draws_the_same_digits_many_times(prep) -> None:
    """prepare.py --scale gpu (the domain_generalization_gpu variant): the lite split of digits, each training
    digit drawn SCALES["gpu"]["train_draws"] times into its environment and each evaluation digit
    eval_draws times into each environment, every draw with its own offset and spurious features."""
    lite, _ = prep.generate("lite")
    gpu, _ = prep.generate("gpu")
    draws = prep.SCALES["gpu"]
    assert draws["train_draws"] >= 20 and draws["eval_draws"] > 1 and prep.SCALES["lite"] == {"train_draws": 1,
                                                                                              "eval_draws": 1}
    assert len(gpu["train"]) == draws["train_draws"] * len(lite["train"]) == 44900
    for phase in ("val", "test"):
        assert len(gpu[phase]) == draws["eval_draws"] * len(lite[phase])
        assert set(gpu[phase]["source"]) == set(lite[phase]["source"])  # the same evaluation digits, no others
        per_env = gpu[phase].groupby(["source", "env"]).size()
        assert (per_env == draws["eval_draws"]).all() and len(per_env) == len(lite[phase])
    per_digit = gpu["train"].groupby("source")["env"].agg(["size", "nunique"])
    assert (per_digit["size"] == draws["train_draws"]).all() and (per_digit["nunique"] == 1).all()
    assert set(per_digit.index) == set(lite["train"]["source"])
    assert gpu["train"].groupby("source")[["offset_y", "offset_x", "colour"]].nunique().min().min() > 1
    every_id = pd.concat([gpu[p]["id"] for p in ("train", "val", "test")])
    assert every_id.is_unique
