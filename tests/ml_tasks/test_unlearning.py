"""The unlearning task's own checks: data, floor, the evaluator's own membership-inference audit, hostile
weights, and the driver's architecture rule (run as a plain subprocess from a copy of the pristine baseline).
The checks every task gets: tests/ml_tasks/test_tasks.py."""

from __future__ import annotations

import re
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from task_kit import driver_rejects, ev, evaluator_rejects, prepared, run_driver, task_dir, task_module

TASK = "unlearning"
TASK_DIR = task_dir(TASK)


def original(prepared) -> dict[str, np.ndarray]:
    with np.load(prepared.public_dir / "original_model.npz") as data:
        return {k: data[k] for k in data.files}


def hidden(prepared, phase: str) -> dict[str, np.ndarray]:
    with np.load(prepared.labels_dir / f"eval_{phase}.npz") as data:
        return {k: data[k] for k in data.files}


def test_agent_visible_data_holds_no_hidden_image(prepared) -> None:
    assert sorted(p.name for p in prepared.public_dir.iterdir()) == ["forget.npz", "original_model.npz",
                                                                     "retain_subset.npz"]
    with np.load(prepared.public_dir / "retain_subset.npz") as retain, np.load(prepared.public_dir / "forget.npz") as forget:
        public = {row.tobytes() for row in np.concatenate([retain["x"], forget["x"]])}
        forget_rows = {row.tobytes() for row in forget["x"]}
    val, test = hidden(prepared, "val"), hidden(prepared, "test")
    for part in ("heldout_x", "unseen_x", "retain_x"):  # scored images are never visible, and val and test differ
        assert not {r.tobytes() for r in val[part]} & public and not {r.tobytes() for r in test[part]} & public
        assert not {r.tobytes() for r in val[part]} & {r.tobytes() for r in test[part]}
    assert {r.tobytes() for r in val["forget_x"]} == forget_rows  # the audit is about exactly the forget set


def test_floor_is_doing_nothing_and_constant_models_score_below_it(prepared, ev) -> None:
    """The floor is the original model returned untouched (trivial/identity); every constant model
    (zero weights and one class's bias, or all zeros as in trivial/constant) scores far below it."""
    spec = prepared.spec
    untouched = {k: v.astype(float) for k, v in original(prepared).items()}
    assert ev.score(untouched, hidden(prepared, "test"))["unlearning_score"] == pytest.approx(spec.metric.floor, abs=1e-12)
    assert ev.score(untouched, hidden(prepared, "val"))["unlearning_score"] <= spec.metric.floor
    constants = [{"w1": np.zeros((100, 128)), "b1": np.zeros(128), "w2": np.zeros((128, 10)), "b2": 10.0 * np.eye(10)[c]}
                 for c in range(10)]
    constants.append({k: np.zeros_like(v, dtype=float) for k, v in untouched.items()})
    scores = [ev.score(w, hidden(prepared, phase))["unlearning_score"] for w in constants for phase in ("val", "test")]
    assert max(scores) < 0.05 < spec.metric.floor


def test_the_original_model_is_caught_by_the_audit(prepared, ev) -> None:
    weights = {k: v.astype(float) for k, v in original(prepared).items()}
    metrics = ev.score(weights, hidden(prepared, "val"))
    assert metrics["forget_acc"] == 1.0 and metrics["retain_acc"] == 1.0 and metrics["mia_auc_loss"] > 0.6
    assert metrics["gap"] == max(metrics["mia_gap"], metrics["retrain_gap"])
    assert metrics["unlearning_score"] == pytest.approx(
        metrics["retain_acc"] * metrics["heldout_acc"] * (1 - metrics["gap"]))
    assert metrics["retrain_auc_forget"] > 0.75  # far from every reference on the forgotten writer's images
    assert metrics["unlearning_score"] < 0.6 < prepared.spec.metric.target


def test_shrinking_the_whole_model_pays_in_heldout_accuracy(prepared, ev) -> None:
    """Forgetting by degrading everything: adding noise to every weight lowers the attacks' AUROC
    but also the accuracy on unseen images, which the score multiplies in."""
    rng = np.random.default_rng(0)
    weights = {k: v.astype(float) for k, v in original(prepared).items()}
    noisy = {k: v + rng.normal(0.0, 0.5 * v.std(), v.shape) for k, v in weights.items()}
    before, after = ev.score(weights, hidden(prepared, "val")), ev.score(noisy, hidden(prepared, "val"))
    assert after["heldout_acc"] < before["heldout_acc"]
    assert after["unlearning_score"] < prepared.spec.metric.target


def test_confidence_softening_alone_is_caught_by_the_label_only_attack(prepared, ev) -> None:
    """Scaling the logits down hides the loss signal on everything, but the forget set is still
    classified perfectly against about 78% of unseen images: the label-only attack sees it."""
    weights = {k: v.astype(float) for k, v in original(prepared).items()}
    weights["w2"], weights["b2"] = weights["w2"] * 1e-3, weights["b2"] * 1e-3
    metrics = ev.score(weights, hidden(prepared, "val"))
    assert metrics["mia_gap"] >= 2 * abs(metrics["mia_auc_label"] - 0.5) > 0.1


def write_npz(path: Path, arrays: dict) -> None:
    path.mkdir(parents=True, exist_ok=True)
    np.savez(path / "model.npz", **arrays)


@pytest.mark.parametrize("make, reason", [
    (lambda w: {**w, "b2": np.full(10, np.nan)}, "NaN or infinite"),
    (lambda w: {**w, "w1": w["w1"].T}, "shape (100, 128)"),
    (lambda w: {k: v for k, v in w.items() if k != "b2"}, "exactly the arrays"),
    (lambda w: {**w, "extra": np.zeros(1)}, "exactly the arrays"),
    (lambda w: {**w, "w2": np.array(["x"] * 1280).reshape(128, 10)}, "numeric array"),
], ids=["nan", "transposed", "missing", "extra", "strings"])
def test_evaluator_rejects_malformed_weights(prepared, ev, tmp_path: Path, make, reason: str) -> None:
    write_npz(tmp_path / "p", make(original(prepared)))
    with pytest.raises(ev.InvalidPredictions, match=re.escape(reason)):
        ev.evaluate("val", tmp_path / "p", prepared.labels_dir)


def test_evaluator_never_unpickles_and_rejects_bombs(prepared, ev, tmp_path: Path) -> None:
    (tmp_path / "pickle").mkdir()
    np.savez(tmp_path / "pickle" / "model.npz", **{**original(prepared), "b2": np.array([object()] * 10)})
    with pytest.raises(ev.InvalidPredictions):
        ev.evaluate("val", tmp_path / "pickle", prepared.labels_dir)
    (tmp_path / "bomb").mkdir()
    with zipfile.ZipFile(tmp_path / "bomb" / "model.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        for key in ("w1", "b1", "w2", "b2"):
            archive.writestr(f"{key}.npy", b"\0" * (8 << 20))  # compresses to KBs, inflates to 32 MB
    with pytest.raises(ev.InvalidPredictions, match="exactly the arrays"):
        ev.evaluate("val", tmp_path / "bomb", prepared.labels_dir)
    evaluator_rejects(prepared.spec, "val", tmp_path / "bomb", prepared.labels_dir, tmp_path)


def test_driver_rejects_a_different_architecture(prepared, tmp_path: Path) -> None:
    unlearn = ("import torch\ndef unlearn(model, fx, fy, rx, ry, params, device):\n"
               "    return torch.nn.Sequential(torch.nn.Linear(100, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))\n")
    driver_rejects(prepared, tmp_path, {"unlearn.py": unlearn}, "architecture of arch.py", output="model.npz")


def test_description_states_the_formula() -> None:
    text = (TASK_DIR / "description.md").read_text()
    assert "unlearning_score` = retain_acc x heldout_acc x (1 - gap)" in text and "2 x |AUROC - 0.5|" in text
    assert "`gap` = max(`mia_gap`, `retrain_gap`)" in text
    assert "labels/" not in text and "evaluate.py" not in text


def test_forget_set_is_one_writer_and_the_references_never_saw_it(prepared) -> None:
    """The generator's forget set and unseen images are writer 0's, none of them retained or held out; the
    audit's reference statistics are per image, for the forget, held-out and unseen images only, from models
    trained on the retained images alone; the retrain test's per-reference log-odds only for writer 0's."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("unlearning_prepare", TASK_DIR / "prepare.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    data = gen.generate()
    unseen = set(data["unseen_val"]) | set(data["unseen_test"])
    assert set(np.flatnonzero(data["writer"] == 0)) == set(data["forget"]) | unseen
    assert not set(data["forget"]) & unseen and not set(data["unseen_val"]) & set(data["unseen_test"])
    assert not (set(data["forget"]) | unseen) & (set(data["retain"]) | set(data["val"]) | set(data["test"]))
    assert set(data["writer"][data["retain"]]) == set(range(1, gen.N_WRITERS))
    for phase in ("val", "test"):
        labels = hidden(prepared, phase)
        for part in ("forget", "heldout", "unseen"):
            n = len(labels[f"{part}_y"])
            assert labels[f"{part}_refmed"].shape == labels[f"{part}_refsd"].shape == labels[f"{part}_refacc"].shape == (n,)
            assert (labels[f"{part}_refsd"] >= gen.SD_FLOOR).all()
            assert ((labels[f"{part}_refacc"] >= 0) & (labels[f"{part}_refacc"] <= 1)).all()
        assert not any(k.startswith("retain_ref") for k in labels) and "heldout_refodds" not in labels
        for part in ("forget", "unseen"):
            assert labels[f"{part}_refodds"].shape == (len(labels[f"{part}_y"]), gen.REFERENCES)  # a row per image
            assert np.allclose(np.median(labels[f"{part}_refodds"], axis=1), labels[f"{part}_refmed"])


def test_gpu_scale_draws_more_of_every_writer_and_a_wider_network() -> None:
    """`prepare.py --scale gpu` (the unlearning_gpu variant): every digit written `copies` times by its one
    writer, so the forget set and the retained images grow by that factor and no digit crosses a split;
    the network is wider. The lite scale is the published task."""
    gen = task_module(TASK, "prepare")
    lite, gpu = gen.SCALES["lite"], gen.SCALES["gpu"]
    assert (lite["copies"], lite["retained"], lite["retain_public"], lite["hidden"]) == (1, 800, 100, 128)
    assert gpu["copies"] >= 5 and gpu["hidden"] >= 2 * lite["hidden"] and gpu["retained"] >= 5 * lite["retained"]
    small, big = gen.generate("lite"), gen.generate("gpu")
    assert len(big["x"]) == gpu["copies"] * len(small["x"]) and big["x"].shape[1] == 100
    assert len(big["forget"]) == gpu["copies"] * len(small["forget"])
    assert (len(big["retain"]), len(big["retain_public"])) == (gpu["retained"], gpu["retain_public"])
    digits = {part: set(big["base"][big[part]]) for part in ("forget", "retain", "val", "test", "unseen_val", "unseen_test")}
    assert not digits["forget"] & (digits["retain"] | digits["val"] | digits["test"] | digits["unseen_val"] | digits["unseen_test"])
    assert not digits["unseen_val"] & digits["unseen_test"]
    assert not digits["retain"] & (digits["val"] | digits["test"])


def test_the_evaluator_takes_the_width_from_its_labels(tmp_path: Path, ev) -> None:
    """gpu-scale labels carry the network's width; a model of any other width is rejected, whatever agent code
    wrote. Labels without it (the lite scale's) mean 128."""
    rng = np.random.default_rng(0)
    labels = {"hidden": np.array(512)}
    for part in ("forget", "heldout", "unseen", "retain"):
        labels.update({f"{part}_x": rng.random((6, 100)), f"{part}_y": np.arange(6)})
    for part in ("forget", "heldout", "unseen"):
        labels.update({f"{part}_refmed": np.zeros(6), f"{part}_refsd": np.ones(6), f"{part}_refacc": np.full(6, 0.5)})
    for part in ("forget", "unseen"):
        labels[f"{part}_refodds"] = rng.normal(0.0, 1.0, (6, 8))
    (tmp_path / "labels").mkdir()
    np.savez(tmp_path / "labels" / "eval_val.npz", **labels)
    for width, ok in ((512, True), (128, False)):
        write_npz(tmp_path / f"w{width}", {k: np.zeros(s, np.float32) for k, s in ev.shapes(width).items()})
        if ok:
            assert ev.evaluate("val", tmp_path / f"w{width}", tmp_path / "labels")["retain_acc"] > 0
        else:
            with pytest.raises(ev.InvalidPredictions, match=r"shape \(100, 512\)"):
                ev.evaluate("val", tmp_path / f"w{width}", tmp_path / "labels")
    assert ev.shapes() == ev.SHAPES == {"w1": (100, 128), "b1": (128,), "w2": (128, 10), "b2": (10,)}


def test_the_driver_builds_the_original_models_width(tmp_path: Path) -> None:
    """arch.py's width is the scale's: the driver sets it from original_model.npz before unlearn.py is imported,
    so arch.HIDDEN and arch.make_model() as agent code sees them match the original model."""
    work = tmp_path / "code"
    shutil.copytree(TASK_DIR / "baseline", work)
    (work / "unlearn.py").write_text("import arch\nWIDTH = arch.HIDDEN\n"
                                     "def unlearn(model, fx, fy, rx, ry, params, device):\n"
                                     "    assert WIDTH == 256, WIDTH\n    return arch.make_model()\n")
    data, rng = tmp_path / "data", np.random.default_rng(0)
    data.mkdir()
    np.savez(data / "original_model.npz", w1=rng.random((100, 256), np.float32), b1=np.zeros(256, np.float32),
             w2=rng.random((256, 10), np.float32), b2=np.zeros(10, np.float32))
    for name in ("forget", "retain_subset"):
        np.savez(data / f"{name}.npz", x=rng.random((4, 100), np.float32), y=np.arange(4))
    result = run_driver(work, "--phase", "val", "--data", str(data), "--out", str(tmp_path / "out"), "--seed", "0")
    assert result.returncode == 0, result.stderr[-2000:]
    with np.load(tmp_path / "out" / "model.npz") as out:
        assert out["w1"].shape == (100, 256) and out["w2"].shape == (256, 10)


def test_the_retrain_test_passes_one_more_reference_and_fails_a_shifted_or_scattered_model(ev) -> None:
    """retrain_auc is about 0.5 for one more draw of the references, well above it for log-odds that are right
    on average but scattered image by image (a stand-in that is not a retrain), and below it for log-odds
    pinned to the references' median (closer than any retrain: that counts in the gap too)."""
    rng = np.random.default_rng(0)
    centre, spread = rng.normal(0.0, 3.0, 2000), rng.uniform(0.5, 2.0, 2000)
    draws = centre + spread * rng.normal(0.0, 1.0, (9, 2000))
    references, retrain = draws[:8], draws[8]
    assert abs(ev.retrain_auc(retrain, references) - 0.5) < 0.03
    assert ev.retrain_auc(centre + 3 * spread * rng.normal(0.0, 1.0, 2000), references) > 0.75
    assert ev.retrain_auc(np.median(references, axis=0), references) < 0.4
