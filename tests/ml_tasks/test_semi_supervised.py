"""The semi_supervised task's own checks: one public label per class, the floor is the best constant, the
driver's per-row rule, the evaluator's label rules, and labels alone leave the scale open. The checks every task
gets: tests/ml_tasks/test_tasks.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from researchbench.benchmark.tasks import workspace as ws
from researchbench.benchmark.tasks.manifest import TaskSpec
from task_kit import (baseline_run, code_copy, driver_rejects, ev, phase_args, prepared, rejects_inprocess, run_driver,
                      spec, with_params)

TASK = "semi_supervised"
PIXELS = [f"p{i}" for i in range(144)]  # 12x12 canvases (version 5)


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


def test_images_carry_hidden_nuisances_on_a_12x12_canvas(prepared: ws.PreparedTask) -> None:
    """Version 5's nuisances show in the written pixels: integers 0..16 on a 12x12 canvas, some canvases
    inverted (a bright border), backgrounds of several levels (noise, fog), and no two images alike."""
    frame = pd.concat([pd.read_csv(prepared.public_dir / name) for name in ("train_unlabeled.csv", "val_inputs.csv")])
    x = frame[PIXELS].to_numpy()
    assert x.min() == 0 and x.max() == 16 and np.issubdtype(x.dtype, np.integer)
    images = x.reshape(-1, 12, 12)
    border = np.median(np.concatenate([images[:, 0], images[:, -1], images[:, :, 0], images[:, :, -1]], axis=1), axis=1)
    assert 0.15 < (border > 8).mean() < 0.45  # inverted polarity on a share of the images
    assert len(np.unique(border[border <= 8])) >= 3  # background levels differ
    assert len(np.unique(x, axis=0)) == len(x)


def test_the_nuisances_are_independent_of_the_digit(prepared: ws.PreparedTask) -> None:
    """Inverted polarity, the one nuisance read off a canvas at a glance, is about equally common in every
    class of the validation images: no nuisance is a shortcut to the label."""
    frame = pd.read_csv(prepared.public_dir / "val_inputs.csv").merge(pd.read_csv(prepared.labels_dir / "val.csv"),
                                                                     on="id")
    images = frame[PIXELS].to_numpy().reshape(-1, 12, 12)
    inverted = np.median(np.concatenate([images[:, 0], images[:, -1]], axis=1), axis=1) > 8
    shares = pd.Series(inverted).groupby(frame["label"].to_numpy()).mean()
    assert shares.max() - shares.min() < 0.4, shares.to_dict()


def test_floor_is_the_best_constant(prepared: ws.PreparedTask, spec: TaskSpec, ev) -> None:
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
    driver_rejects(prepared, tmp_path, {"model.py": TRANSDUCTIVE}, "not a function of each row alone")


@pytest.mark.parametrize("breakage, reason", [
    (lambda f: f.assign(label=[10] + list(f["label"].iloc[1:])), "digits 0..9"),
    (lambda f: f.assign(label=[-1] + list(f["label"].iloc[1:])), "digits 0..9"),
    (lambda f: f.assign(label=[0.5] + list(f["label"].iloc[1:])), "must hold integers"),
], ids=["ten", "negative", "fraction"])
def test_evaluator_rejects_invalid_predictions(prepared: ws.PreparedTask, ev, tmp_path: Path, capsys, breakage,
                                               reason: str) -> None:
    """Beyond tests/ml_tasks/test_tasks.py's hostile cases (no file, binary, NaN, foreign, duplicated, missing rows)."""
    breakage(pd.read_csv(prepared.labels_dir / "val.csv")).to_csv(tmp_path / "predictions.csv", index=False)
    line = rejects_inprocess(ev, "val", tmp_path, prepared.labels_dir, tmp_path, capsys)
    assert reason in line, line


def test_evaluator_scores_known_answers(prepared: ws.PreparedTask, ev) -> None:
    truth = pd.read_csv(prepared.labels_dir / "val.csv")
    assert ev.evaluate_frame(truth, prepared.labels_dir, "val") == {"accuracy": 1.0, "balanced_accuracy": 1.0}
    wrong = truth.assign(label=(truth["label"] + 1) % 10)
    assert ev.evaluate_frame(wrong, prepared.labels_dir, "val")["accuracy"] == 0.0


def test_labels_alone_and_the_baseline_leave_the_scale_open(prepared: ws.PreparedTask, spec: TaskSpec, ev,
                                                           tmp_path: Path) -> None:
    """With one label per class the labels alone, and self-training on them, score far below the target: the
    unlabeled images must earn it (on version 5's images, with their hidden nuisances, self-training does no
    better than the labels alone)."""
    code = code_copy(prepared, tmp_path / "code", {"params.json": with_params(prepared, method="supervised")})
    assert run_driver(code, *phase_args(prepared, "val", tmp_path / "out")).returncode == 0
    supervised = ev.evaluate("val", tmp_path / "out", prepared.labels_dir)["accuracy"]
    baseline = baseline_run(TASK).outcome
    assert baseline.ok and spec.metric.better(baseline.primary, spec.metric.floor), baseline.bug_reason
    assert max(supervised, spec.baseline.val[0]) < spec.metric.target - 0.6
