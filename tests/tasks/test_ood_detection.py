"""The ood_detection task's own checks: val and test OOD sources differ and carry no cheap tell, every image to
score (and no training image) passes through the scanner, strong first drafts stay off the metric's bound, the
floor is chance, the FPR's tie rule, the driver's per-image rule and the evaluator's score rules. The checks
every task gets: tests/test_tasks.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmark.tasks import workspace as ws
from benchmark.tasks.manifest import TaskSpec
from task_kit import (baseline_run, driver_rejects, ev, overlay_run, prepared, rejects_inprocess, spec,
                      value_column_breakages)

TASK = "ood_detection"
PIXELS = [f"p{i}" for i in range(64)]


def _prepare_module(spec: TaskSpec):
    from importlib import util
    module_spec = util.spec_from_file_location("ood_prepare", spec.task_dir / "prepare.py")
    prep = util.module_from_spec(module_spec)
    module_spec.loader.exec_module(prep)
    return prep


def _phase_frame(prepared: ws.PreparedTask, phase: str) -> pd.DataFrame:
    inputs = prepared.public_dir / "val_inputs.csv" if phase == "val" else prepared.test_inputs_dir / "test_inputs.csv"
    return pd.read_csv(inputs).merge(pd.read_csv(prepared.labels_dir / f"{phase}.csv"), on="id")


def test_prepared_data_val_and_test_ood_sources_differ(prepared: ws.PreparedTask, spec: TaskSpec,
                                                                      tmp_path: Path) -> None:
    train = pd.read_csv(prepared.public_dir / "train.csv")
    val = pd.read_csv(prepared.public_dir / "val_inputs.csv")
    test = pd.read_csv(prepared.test_inputs_dir / "test_inputs.csv")
    assert sorted(train["label"].unique()) == [0, 1, 2, 3, 4]
    assert list(val.columns) == list(test.columns) == ["id"] + PIXELS  # nothing says which input is OOD
    keys = {p: pd.read_csv(prepared.labels_dir / f"{p}.csv") for p in ("val", "test")}
    for phase, key in keys.items():
        assert key["kind"].value_counts().to_dict() == {"id": 180, "near": 180, "far": 180}, phase
    # no image is shared between the parts, so val OOD images never reappear in the test
    as_rows = [set(map(tuple, f[PIXELS].to_numpy())) for f in (train, val, test)]
    for phase, frame, rows in (("val", val, as_rows[1]), ("test", test, as_rows[2])):
        ood = frame.merge(keys[phase], on="id").query("kind != 'id'")
        assert not set(map(tuple, ood[PIXELS].to_numpy())) & (as_rows[0] | as_rows[1 if phase == "test" else 2])
    prep = _prepare_module(spec)
    assert not set(prep.NEAR_OOD["val"]) & set(prep.NEAR_OOD["test"])
    assert prep.FAR_OOD_IMAGE["val"] != prep.FAR_OOD_IMAGE["test"]


@pytest.mark.parametrize("phase", ["val", "test"])
def test_pixel_statistics_alone_do_not_flag_the_photograph_patches(prepared: ws.PreparedTask, phase: str) -> None:
    """Each far-OOD patch carries a real scanned digit's pixel values: brightness, spread and blank pixels are no
    tell (the scanner's shift included: a patch is shifted before it gets a shifted digit's values)."""
    from sklearn.metrics import roc_auc_score

    frame = _phase_frame(prepared, phase).query("kind != 'near'")
    x, is_far = frame[PIXELS].to_numpy(float), (frame["kind"] == "far").to_numpy()
    for statistic in (np.linalg.norm(x, axis=1), x.mean(axis=1), (x > 0).mean(axis=1), x.max(axis=1), x.std(axis=1)):
        assert abs(roc_auc_score(is_far, statistic) - 0.5) < 0.1


def test_the_scanner_shifts_by_at_most_one_pixel_and_adds_noise(spec: TaskSpec) -> None:
    prep = _prepare_module(spec)
    rng = np.random.default_rng(0)
    dot = np.zeros((900, 64))
    dot[:, 3 * 8 + 4] = 16.0  # one bright pixel at row 3, column 4
    moved = prep.shifted(dot, rng)
    rows, cols = np.divmod(moved.argmax(axis=1), 8)
    offsets = set(zip(rows - 3, cols - 4))
    assert offsets == {(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)}  # every offset, none larger
    assert np.all(moved.sum(axis=1) == 16.0)  # a shift moves pixels, it does not change them
    grey = prep.noisy(np.full((200, 64), 8.0), rng)
    assert grey.dtype == np.int64 and grey.min() >= 0 and grey.max() <= 16
    # sd 4 around level 8, clipped at 0 and 16 (two sds away): a little under 4
    assert prep.SCAN_NOISE == 4.0 and 3.7 < grey.std() < 4.0 and abs(grey.mean() - 8.0) < 0.05


def test_images_to_score_are_scanned_and_training_images_are_not(prepared: ws.PreparedTask) -> None:
    """Training images are sklearn's digits as they are; every image to score, ID or OOD, is noisy."""
    from sklearn.datasets import load_digits

    originals = {tuple(row) for row in np.asarray(load_digits().data, dtype=np.int64)}
    train = pd.read_csv(prepared.public_dir / "train.csv")
    assert all(tuple(row) in originals for row in train[PIXELS].to_numpy())
    for phase in ("val", "test"):
        frame = _phase_frame(prepared, phase)
        for kind, part in frame.groupby("kind"):
            x = part[PIXELS].to_numpy()
            assert not any(tuple(row) in originals for row in x), (phase, kind)
            assert 0.28 < (x == 0).mean() < 0.40, (phase, kind)  # train: ~0.49 zeros; the noise lifts about a third


def test_strong_first_drafts_stay_off_the_metrics_bound(prepared: ws.PreparedTask, ev) -> None:
    """Version 2's failure: a pixel nearest-neighbour draft scored val FPR 0.0, the metric's bound, so the search
    had nothing left to select on. Under the scanner neither it nor its shift-aware version comes near it."""
    from sklearn.neighbors import NearestNeighbors

    train = pd.read_csv(prepared.public_dir / "train.csv")[PIXELS].to_numpy(float)
    padded = np.pad(train.reshape(-1, 8, 8), ((0, 0), (1, 1), (1, 1)))
    every_shift = np.concatenate([padded[:, dy:dy + 8, dx:dx + 8].reshape(len(train), 64)
                                  for dy in range(3) for dx in range(3)])
    for phase in ("val", "test"):
        frame = _phase_frame(prepared, phase)
        x = frame[PIXELS].to_numpy(float)
        for bank, least in ((train, 0.5), (every_shift, 0.05)):
            distance = NearestNeighbors(n_neighbors=1).fit(bank).kneighbors(x)[0][:, 0]
            fpr = ev.evaluate_frame(pd.DataFrame({"id": frame["id"], "score": distance}), prepared.labels_dir,
                                    phase)["fpr_at_95_tpr"]
            assert fpr > least, (phase, len(bank), fpr)


def test_ids_and_row_order_carry_no_label_information(prepared: ws.PreparedTask, ev) -> None:
    val = pd.read_csv(prepared.public_dir / "val_inputs.csv")
    for scores in (val["id"].to_numpy(float), np.arange(len(val), dtype=float)):
        metrics = ev.evaluate_frame(pd.DataFrame({"id": val["id"], "score": scores}), prepared.labels_dir, "val")
        assert abs(metrics["auroc"] - 0.5) < 0.08


def test_baseline_beats_the_floor(spec: TaskSpec) -> None:
    outcome = baseline_run(TASK).outcome  # its record: tests/test_tasks.py
    assert outcome.ok and spec.metric.better(outcome.primary, spec.metric.floor), outcome.bug_reason


def test_constant_scores_accept_every_ood_image(spec: TaskSpec) -> None:
    outcome = overlay_run(TASK, "checks/constant", "val").outcome
    assert outcome.ok, outcome.bug_reason
    assert outcome.metrics["fpr_at_95_tpr"] == 1.0 and outcome.metrics["auroc"] == 0.5


def test_random_scores_sit_near_the_floor(prepared: ws.PreparedTask, spec: TaskSpec, ev) -> None:
    """The floor is chance: scores drawn without looking at the image accept ~95% of OOD images."""
    val = pd.read_csv(prepared.public_dir / "val_inputs.csv")
    fprs = [ev.evaluate_frame(pd.DataFrame({"id": val["id"], "score": np.random.default_rng(s).random(len(val))}),
                              prepared.labels_dir, "val")["fpr_at_95_tpr"] for s in range(20)]
    assert abs(np.mean(fprs) - spec.metric.floor) < 0.02


def test_fpr_counts_ood_images_tied_with_the_threshold_as_accepted(ev) -> None:
    is_ood = np.array([False] * 20 + [True] * 4)
    in_dist = np.arange(20, dtype=float)  # the threshold accepting 19 of 20 (95%) is 18
    assert ev.fpr_at_95_tpr(is_ood, np.concatenate([in_dist, [18.0, 18.5, 19.0, 30.0]])) == 0.25
    assert ev.fpr_at_95_tpr(is_ood, np.concatenate([in_dist, [17.0, 18.0, 0.0, 19.0]])) == 0.75


BATCH_DEPENDENT = """\
import numpy as np
def fit(x, y, params, device):
    return None
def score(detector, x):
    s = x.sum(axis=1)
    return s - s.mean()  # relative to the batch: uses the other inputs
"""


def test_driver_rejects_scores_that_depend_on_the_batch(prepared: ws.PreparedTask, tmp_path: Path) -> None:
    driver_rejects(prepared, tmp_path, {"model.py": BATCH_DEPENDENT}, "not a function of each image alone",
                   output="scores.csv")


def _val_scores(prepared: ws.PreparedTask) -> pd.DataFrame:
    key = pd.read_csv(prepared.labels_dir / "val.csv")
    return pd.DataFrame({"id": key["id"], "score": (key["ood"] * 2.0 - 1).to_numpy()})


@pytest.mark.parametrize("breakage, reason", value_column_breakages("score", "id"))
def test_evaluator_rejects_invalid_scores(prepared: ws.PreparedTask, ev, tmp_path: Path, capsys, breakage,
                                          reason: str) -> None:
    """Beyond tests/test_tasks.py's hostile cases (no file, binary, oversized, NaN, foreign, duplicated, missing)."""
    breakage(_val_scores(prepared)).to_csv(tmp_path / "scores.csv", index=False)
    line = rejects_inprocess(ev, "val", tmp_path, prepared.labels_dir, tmp_path, capsys)
    assert reason in line, line


def test_evaluator_scores_known_answers(prepared: ws.PreparedTask, ev) -> None:
    perfect = _val_scores(prepared)
    best = ev.evaluate_frame(perfect, prepared.labels_dir, "val")
    assert best["auroc"] == 1.0 and best["fpr_at_95_tpr"] == 0.0
    worst = ev.evaluate_frame(perfect.assign(score=-perfect["score"]), prepared.labels_dir, "val")
    assert worst["auroc"] == 0.0 and worst["fpr_at_95_tpr"] == 1.0
    shuffled = perfect.sample(frac=1.0, random_state=0)  # row order does not matter
    assert ev.evaluate_frame(shuffled, prepared.labels_dir, "val")["fpr_at_95_tpr"] == 0.0
