"""The ood_detection task's own checks: the generator (its replay, its classes kept apart, alterations no training
class draws, the oracle's closed-form likelihood), val and test OOD sources and mixes that differ and carry no
cheap tell, strong first drafts that stay off the metric's bound, the floor is chance, the FPR's tie rule, the
driver's per-image rule and the evaluator's score rules. The checks every task gets: tests/ml_tasks/test_tasks.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from researchbench.benchmark.tasks import workspace as ws
from researchbench.benchmark.tasks.manifest import TaskSpec
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


@pytest.fixture(scope="module")
def draws(spec: TaskSpec):
    prep = _prepare_module(spec)
    return prep, prep.generate()


def test_prepared_data_holds_what_the_description_says(prepared: ws.PreparedTask) -> None:
    train = pd.read_csv(prepared.public_dir / "train.csv")
    val = pd.read_csv(prepared.public_dir / "val_inputs.csv")
    test = pd.read_csv(prepared.test_inputs_dir / "test_inputs.csv")
    assert train["label"].value_counts().sort_index().to_dict() == {c: 60 for c in range(5)}
    assert list(val.columns) == list(test.columns) == ["id"] + PIXELS  # nothing says which input is OOD
    for phase in ("val", "test"):
        key = pd.read_csv(prepared.labels_dir / f"{phase}.csv")
        assert len(key) == 1000 and key["ood"].sum() == 500 and set(key["kind"]) == {"id", "novel", "altered"}
        assert (key["ood"] == (key["kind"] != "id")).all()
    ids = [set(f["id"]) for f in (train, val, test)]
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])


def test_lite_is_the_default_scale_and_writes_the_prepared_bytes(prepared: ws.PreparedTask, spec: TaskSpec,
                                                                  tmp_path: Path) -> None:
    """`--scale lite` is what the manifest's prepare command (no --scale) wrote: the lite task did not move."""
    prep = _prepare_module(spec)
    assert prep.main(["--out", str(tmp_path), "--scale", "lite"]) == 0
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert written and all((tmp_path / rel).read_bytes() == (prepared.root / rel).read_bytes() for rel in written)


def test_the_gpu_scale_writes_its_larger_sizes_from_the_same_world(spec: TaskSpec, draws, tmp_path: Path) -> None:
    """`prepare.py --scale gpu` (the ood_detection_gpu variant, its description's sizes): 3000 training glyphs per
    class, 2500 + 2500 images per evaluation phase, the same classes and novel classes as lite."""
    prep, lite = draws
    sizes = prep.SCALES["gpu"]
    assert sizes == {"train_per_class": 3000, "eval": {"id": 2500, "ood": 2500}}
    assert prep.main(["--out", str(tmp_path), "--scale", "gpu"]) == 0
    train = pd.read_csv(tmp_path / "public" / "train.csv")
    assert train["label"].value_counts().sort_index().to_dict() == {c: 3000 for c in range(5)}
    ids = [set(train["id"])]
    for phase, inputs in (("val", "public/val_inputs.csv"), ("test", "test_inputs/test_inputs.csv")):
        frame, key = pd.read_csv(tmp_path / inputs), pd.read_csv(tmp_path / "labels" / f"{phase}.csv")
        assert len(frame) == len(key) == 5000 and key["ood"].sum() == 2500 and set(frame["id"]) == set(key["id"])
        assert set(key["kind"]) == {"id", "novel", "altered"}
        ids.append(set(frame["id"]))
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    gpu = prep.generate("gpu")
    assert gpu["classes"] == lite["classes"] and gpu["novel"] == lite["novel"]


def test_the_generator_replays_the_prepared_files(prepared: ws.PreparedTask, draws) -> None:
    """The oracle (benchmarks/oracle_ood_detection.py) rests on prepare.generate() giving the written draws."""
    _, d = draws
    train = pd.read_csv(prepared.public_dir / "train.csv").set_index("id").loc[d["train"]["id"]]
    assert np.array_equal(train[PIXELS].to_numpy(), d["train"]["x"]) and np.array_equal(train["label"], d["train"]["y"])
    for phase in ("val", "test"):
        frame = _phase_frame(prepared, phase).set_index("id").loc[d[phase]["id"]]
        assert np.array_equal(frame[PIXELS].to_numpy(), d[phase]["x"])
        assert (frame["kind"].to_numpy() == d[phase]["kind"]).all()


def test_classes_are_kept_apart_and_alterations_are_never_a_training_glyph(draws) -> None:
    prep, d = draws
    cores = [c[0] for c in d["classes"] + d["novel"]["val"] + d["novel"]["test"]]
    assert all(len(a ^ b) >= prep.MIN_APART for i, a in enumerate(cores) for b in cores[i + 1:])
    allowed = set(prep.class_sets(d["classes"]))
    for phase in ("val", "test"):
        mechanisms = d[phase]["mechanisms"]
        assert set(mechanisms) == set(prep.MECHANISMS)
        for name, sets in mechanisms.items():
            assert abs(sum(sets.values()) - 1.0) < 1e-9, (phase, name)
            assert not set(sets) & allowed, (phase, name)  # no OOD glyph is one a training class draws
    assert not set(d["val"]["mechanisms"]["novel"]) & set(d["test"]["mechanisms"]["novel"])
    assert np.abs(d["val"]["mix"] - d["test"]["mix"]).max() > 0.1  # the phases mix the mechanisms differently


def test_the_oracles_likelihood_integrates_the_brightness_exactly(draws) -> None:
    """prepare.log_likelihood's closed form against a numerical integral over the brightness."""
    prep, d = draws
    rng = np.random.default_rng(0)
    mean = prep.render(d["classes"][0][0], prep.POSES[7])
    b0, b1 = prep.BRIGHTNESS
    grid = np.linspace(b0, b1, 40001)
    for brightness in (b0 + 1.0, 0.5 * (b0 + b1), b1 + 5.0):  # the last one outside the range: a tail
        x = brightness * mean + rng.normal(0.0, prep.NOISE, 64)
        log_pdf = (-((x[None, :] - grid[:, None] * mean[None, :]) ** 2).sum(axis=1) / (2 * prep.NOISE ** 2)
                   - 32 * np.log(2 * np.pi * prep.NOISE ** 2))
        numeric = np.log(np.trapezoid(np.exp(log_pdf - log_pdf.max()), grid)) + log_pdf.max() - np.log(b1 - b0)
        assert prep.log_likelihood(x[None, :], mean[None, :], np.zeros(1))[0] == pytest.approx(numeric, abs=1e-4)


@pytest.mark.parametrize("phase", ["val", "test"])
def test_pixel_statistics_alone_do_not_flag_the_ood_glyphs(prepared: ws.PreparedTask, phase: str) -> None:
    """OOD glyphs are drawn by the same renderer with the same nuisances: brightness, spread and blank pixels are no
    tell."""
    from sklearn.metrics import roc_auc_score

    frame = _phase_frame(prepared, phase)
    x, is_ood = frame[PIXELS].to_numpy(float), frame["ood"].to_numpy()
    for statistic in (np.linalg.norm(x, axis=1), x.mean(axis=1), (x > 4).mean(axis=1), x.max(axis=1), x.std(axis=1)):
        assert abs(roc_auc_score(is_ood, statistic) - 0.5) < 0.1


def test_strong_first_drafts_stay_off_the_metrics_bound(prepared: ws.PreparedTask, ev) -> None:
    """Version 2's failure: a pixel nearest-neighbour draft scored val FPR 0.0, the metric's bound, so the search
    had nothing left to select on. Here neither it nor its shift-aware version comes near it."""
    from sklearn.neighbors import NearestNeighbors

    train = pd.read_csv(prepared.public_dir / "train.csv")[PIXELS].to_numpy(float)
    padded = np.pad(train.reshape(-1, 8, 8), ((0, 0), (1, 1), (1, 1)))
    every_shift = np.concatenate([padded[:, dy:dy + 8, dx:dx + 8].reshape(len(train), 64)
                                  for dy in range(3) for dx in range(3)])
    for phase in ("val", "test"):
        frame = _phase_frame(prepared, phase)
        x = frame[PIXELS].to_numpy(float)
        for bank in (train, every_shift):
            distance = NearestNeighbors(n_neighbors=1).fit(bank).kneighbors(x)[0][:, 0]
            fpr = ev.evaluate_frame(pd.DataFrame({"id": frame["id"], "score": distance}), prepared.labels_dir,
                                    phase)["fpr_at_95_tpr"]
            assert fpr > 0.5, (phase, len(bank), fpr)


def test_ids_and_row_order_carry_no_label_information(prepared: ws.PreparedTask, ev) -> None:
    val = pd.read_csv(prepared.public_dir / "val_inputs.csv")
    for scores in (val["id"].to_numpy(float), np.arange(len(val), dtype=float)):
        metrics = ev.evaluate_frame(pd.DataFrame({"id": val["id"], "score": scores}), prepared.labels_dir, "val")
        assert abs(metrics["auroc"] - 0.5) < 0.08


def test_baseline_beats_the_floor(spec: TaskSpec) -> None:
    outcome = baseline_run(TASK).outcome  # its record: tests/ml_tasks/test_tasks.py
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
    """Beyond tests/ml_tasks/test_tasks.py's hostile cases (no file, binary, oversized, NaN, foreign, duplicated, missing)."""
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
