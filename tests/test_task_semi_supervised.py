"""The semi_supervised task: data, driver, evaluator, and what cannot game it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmark.tasks import workspace as ws
from benchmark.tasks.manifest import TaskSpec
from tests.task_harness import (code_copy, load_evaluator, prepare_into, reproduce_seed, run_driver, spec_of,
                                with_params)

NAME = "semi_supervised"
PIXELS = [f"p{i}" for i in range(64)]


@pytest.fixture(scope="module")
def spec() -> TaskSpec:
    return spec_of(NAME)


@pytest.fixture(scope="module")
def prepared(spec: TaskSpec, tmp_path_factory: pytest.TempPathFactory) -> ws.PreparedTask:
    return prepare_into(spec, tmp_path_factory.mktemp("ssl-ws"))


@pytest.fixture(scope="module")
def ev(spec: TaskSpec):
    return load_evaluator(spec)


def test_prepared_data_exposes_one_label_per_class(prepared: ws.PreparedTask) -> None:
    labeled = pd.read_csv(prepared.public_dir / "train_labeled.csv")
    assert sorted(labeled["label"]) == list(range(10))
    for rel in ("train_unlabeled.csv", "val_inputs.csv"):
        assert list(pd.read_csv(prepared.public_dir / rel).columns) == ["id"] + PIXELS
    assert sorted(p.name for p in prepared.public_dir.iterdir()) == ["train_labeled.csv", "train_unlabeled.csv",
                                                                     "val_inputs.csv"]
    ids = [set(pd.read_csv(path)["id"]) for path in (prepared.public_dir / "train_labeled.csv",
                                                      prepared.public_dir / "train_unlabeled.csv",
                                                      prepared.public_dir / "val_inputs.csv",
                                                      prepared.test_inputs_dir / "test_inputs.csv")]
    assert sum(map(len, ids)) == len(set().union(*ids)) == 1797


@pytest.fixture(scope="module")
def baseline_val(prepared: ws.PreparedTask, ev, tmp_path_factory: pytest.TempPathFactory) -> dict[str, float]:
    tmp = tmp_path_factory.mktemp("ssl-baseline")
    result = run_driver(code_copy(prepared, tmp / "code"), "val", prepared, tmp / "out", seed=0)
    assert result.returncode == 0, result.stderr
    return ev.evaluate("val", tmp / "out", prepared.labels_dir)


def test_baseline_val_matches_the_record_and_beats_the_floor(baseline_val: dict, spec: TaskSpec) -> None:
    assert spec.baseline is not None and spec.baseline.seeds[0] == 0
    assert baseline_val["accuracy"] == pytest.approx(spec.baseline.val[0], abs=1e-9)
    assert spec.metric.better(baseline_val["accuracy"], spec.metric.floor)


def test_constant_overlay_scores_no_better_than_the_floor(prepared: ws.PreparedTask, spec: TaskSpec, ev,
                                                          tmp_path: Path) -> None:
    code = code_copy(prepared, tmp_path / "code", overlay=spec.task_dir / "checks" / "constant")
    result = run_driver(code, "test", prepared, tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert not spec.metric.better(ev.evaluate("test", tmp_path / "out", prepared.labels_dir)["accuracy"],
                                  spec.metric.floor)
    truth = pd.read_csv(prepared.labels_dir / "test.csv").rename(columns={"label": "target"})
    assert spec.metric.floor == max(ev.score(truth.assign(label=k))["accuracy"] for k in range(10))


TRANSDUCTIVE = """\
import numpy as np
from sklearn.cluster import KMeans
def fit(x_labeled, y_labeled, x_unlabeled, params, device):
    return None
def predict(model, x):
    return KMeans(n_clusters=min(10, len(x)), n_init=1, random_state=0).fit_predict(x)  # learns from the batch
"""


def test_driver_rejects_predictions_learned_from_the_batch(prepared: ws.PreparedTask, tmp_path: Path) -> None:
    code = code_copy(prepared, tmp_path / "code", {"model.py": TRANSDUCTIVE})
    result = run_driver(code, "val", prepared, tmp_path / "out")
    assert result.returncode == 1 and "not a function of each row alone" in result.stderr, result.stderr


@pytest.mark.parametrize("breakage, reason", [
    (lambda f: f.iloc[1:], "missing"),
    (lambda f: pd.concat([f, f.iloc[:1]]), "duplicated"),
    (lambda f: f.assign(label=[10] + list(f["label"].iloc[1:])), "digits 0..9"),
    (lambda f: f.assign(label=[-1] + list(f["label"].iloc[1:])), "digits 0..9"),
    (lambda f: f.assign(label=[0.5] + list(f["label"].iloc[1:])), "must hold integers"),
    (lambda f: pd.concat([f, pd.DataFrame({"id": [10**6], "label": [0]})]), "unexpected"),
    (None, "was not written"),
], ids=["missing-row", "duplicate", "ten", "negative", "fraction", "extra-id", "no-file"])
def test_evaluator_rejects_invalid_predictions(prepared: ws.PreparedTask, ev, tmp_path: Path, capsys, breakage,
                                               reason: str) -> None:
    if breakage is not None:
        breakage(pd.read_csv(prepared.labels_dir / "val.csv")).to_csv(tmp_path / "predictions.csv", index=False)
    metrics = tmp_path / "metrics.json"
    metrics.write_text('{"metrics": {"accuracy": 1.0}}')
    code = ev.main(["--phase", "val", "--predictions-dir", str(tmp_path), "--labels", str(prepared.labels_dir),
                    "--metrics", str(metrics)])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1 and reason in err, err
    assert not metrics.exists()


def test_evaluator_scores_known_answers(prepared: ws.PreparedTask, ev) -> None:
    truth = pd.read_csv(prepared.labels_dir / "val.csv")
    assert ev.evaluate_frame(truth, prepared.labels_dir, "val") == {"accuracy": 1.0, "balanced_accuracy": 1.0}
    wrong = truth.assign(label=(truth["label"] + 1) % 10)
    assert ev.evaluate_frame(wrong, prepared.labels_dir, "val")["accuracy"] == 0.0


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


def test_labels_alone_and_the_baseline_leave_the_scale_open(prepared: ws.PreparedTask, spec: TaskSpec, ev,
                                                           tmp_path: Path) -> None:
    """With one label per class the labels alone score far below the target: the unlabeled images must earn it."""
    code = code_copy(prepared, tmp_path / "code", {"params.json": with_params(prepared, method="supervised")})
    assert run_driver(code, "val", prepared, tmp_path / "out").returncode == 0
    supervised = ev.evaluate("val", tmp_path / "out", prepared.labels_dir)["accuracy"]
    assert supervised < spec.baseline.val[0] < spec.metric.target - 0.2
