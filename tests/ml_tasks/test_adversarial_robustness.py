"""The adversarial_robustness task's own checks: data, driver, the harness-owned attack, and what cannot game it.
The checks every task gets (record, floor, hostile files, reference): tests/ml_tasks/test_tasks.py.

Attack-running checks use the evaluator in-process on a slice of the validation images. The
gradient-masking checks still cost ~40 CPU-seconds (Square Attack runs its full query budget on
every image a masked network survives), so they and the driver round trip are `@pytest.mark.slow`.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from researchbench.benchmark.tasks import workspace as ws
from researchbench.benchmark.tasks.manifest import TaskSpec
from task_kit import code_copy, ev, evaluate, phase_args, prepared, run_driver, spec, with_params

TASK = "adversarial_robustness"
SLICE = 32  # validation images attacked by the in-process checks


@pytest.fixture(scope="module")
def family(spec: TaskSpec):
    sys.path.insert(0, str(spec.task_dir / "baseline"))
    import family as module

    return module


@pytest.fixture(scope="module")
def val_slice(ev, prepared: ws.PreparedTask) -> tuple[np.ndarray, np.ndarray]:
    x, y = ev.load_images(prepared.labels_dir, "val")
    return x[:SLICE], y[:SLICE]


def train_plain(family, prepared: ws.PreparedTask, epochs: int = 10):
    """A quickly trained, non-robust network of the family (standard training)."""
    import torch

    sys.path.insert(0, str(prepared.baseline_dir))
    import model

    frame = pd.read_csv(prepared.public_dir / "train.csv")
    x = (frame[family.FEATURES].to_numpy(np.float32) / 16).astype(np.float32)
    torch.manual_seed(0)
    params = {"width": 64, "depth": 1, "lr": 0.003, "weight_decay": 0.0, "batch_size": 64, "epochs": epochs}
    return model.train_model(x, frame["label"].to_numpy(np.int64), params, "cpu"), x, frame["label"].to_numpy()


# --- data and layout ------------------------------------------------------------------------------------------

def test_prepared_data_keeps_evaluation_images_hidden(prepared: ws.PreparedTask, spec: TaskSpec,
                                                                      tmp_path: Path) -> None:
    assert sorted(p.name for p in prepared.public_dir.iterdir()) == ["train.csv"]
    train = pd.read_csv(prepared.public_dir / "train.csv")
    val, test = (pd.read_csv(prepared.labels_dir / f) for f in ("val.csv", "test.csv"))
    assert (len(train), len(val), len(test)) == (538, 359, 360)
    assert list(train.columns) == ["id", *[f"x{i}" for i in range(100)], "label"]
    assert not (set(train["id"]) & set(val["id"]) or set(train["id"]) & set(test["id"]) or set(val["id"]) & set(test["id"]))
    # the val phase names neither labels nor test inputs; the evaluator's images live under labels/
    assert "{labels}" not in " ".join(spec.phases["val"]) and "{test_inputs}" not in " ".join(spec.phases["val"])


def test_the_generator_replays_the_files_and_keeps_its_hidden_half_unwritten(prepared: ws.PreparedTask,
                                                                              spec: TaskSpec) -> None:
    """What the oracle (benchmarks/oracle_adversarial_robustness.py) relies on: `generate` reproduces the
    written tables, the training digits are half of a pool that shares no digit with val or test, and the
    column order is a real permutation."""
    import importlib.util

    module_spec = importlib.util.spec_from_file_location("adversarial_robustness_prepare", spec.task_dir / "prepare.py")
    gen = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(gen)
    tables, order, parts, images, labels = gen.generate()
    for phase, path in (("train", prepared.public_dir / "train.csv"), ("val", prepared.labels_dir / "val.csv"),
                        ("test", prepared.labels_dir / "test.csv")):
        pd.testing.assert_frame_equal(pd.read_csv(path), tables[phase].sort_values("id").reset_index(drop=True),
                                      check_dtype=False)
    assert set(parts["train"]) < set(parts["pool"]) and (len(parts["train"]), len(parts["pool"])) == (538, 1078)
    assert not set(parts["pool"]) & (set(parts["val"]) | set(parts["test"]))
    assert sorted(order) == list(range(100)) and (order != np.arange(100)).mean() > 0.9
    # every written image is its digit's box somewhere on the canvas, in the column order
    canvas = np.zeros((len(parts["train"]), 100), dtype=np.int64)
    canvas[:, order] = tables["train"][[f"x{i}" for i in range(100)]].to_numpy()
    assert (canvas.sum(axis=1) == images[parts["train"]].sum(axis=1)).all()


# --- what reaches the evaluator -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_driver_exports_weights_that_the_evaluator_scores(prepared: ws.PreparedTask, ev, tmp_path: Path) -> None:
    code = code_copy(prepared, tmp_path / "code", {"params.json": with_params(prepared, epochs=2, width=32)})
    result = run_driver(code, *phase_args(prepared, "val", tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == ["model.safetensors"]
    net = ev.load_model(tmp_path / "out" / "model.safetensors")
    assert [layer.out_features for layer in net.layers] == [32, 32, 10]


def write_state(family, path: Path, tensors: dict[str, np.ndarray]) -> Path:
    from safetensors.numpy import save_file

    save_file(tensors, str(path))
    return path


class Payload:
    """A pickle that runs code when loaded: what torch.load(weights_only=False) would execute."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (Path(self.marker).touch, ())


def test_a_pickled_payload_is_rejected_and_never_runs(spec: TaskSpec, prepared: ws.PreparedTask,
                                                      tmp_path: Path) -> None:
    handed = tmp_path / "handed"
    handed.mkdir()
    marker = tmp_path / "payload-ran"
    (handed / "model.safetensors").write_bytes(pickle.dumps(Payload(str(marker))))
    metrics = tmp_path / "metrics.json"
    metrics.write_text('{"metrics": {"robust_accuracy": 1.0}}')  # a stale file must not survive
    result = evaluate(spec, "val", handed, prepared.labels_dir, metrics)
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1 and "not a readable safetensors file" in result.stderr
    assert not marker.exists() and not metrics.exists()


def _good(family) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {"layers.0.weight": rng.normal(size=(16, family.INPUT_DIM)).astype(np.float32), "layers.0.bias": np.zeros(16, np.float32),
            "layers.1.weight": rng.normal(size=(10, 16)).astype(np.float32), "layers.1.bias": np.zeros(10, np.float32)}


@pytest.mark.parametrize("breakage, reason", [
    (lambda t: {k: v for k, v in t.items() if k != "layers.1.bias"}, "expected tensors"),
    (lambda t: {**t, "extra": np.zeros(3, np.float32)}, "expected tensors"),
    (lambda t: {**t, "layers.1.weight": np.zeros((9, 16), np.float32), "layers.1.bias": np.zeros(9, np.float32)},
     "do not chain"),
    (lambda t: {**t, "layers.0.weight": np.zeros((16, 63), np.float32)}, "do not chain"),
    (lambda t: {**t, "layers.0.weight": np.full((16, 100), np.nan, np.float32)}, "NaN or infinite"),
    (lambda t: {**t, "layers.0.bias": np.full(16, 1e6, np.float32)}, "magnitude"),
    (lambda t: {**t, "layers.0.bias": np.zeros(16, np.int32)}, "floating point"),
    (lambda t: {"layers.0.weight": np.zeros((600, 100), np.float32), "layers.0.bias": np.zeros(600, np.float32),
                "layers.1.weight": np.zeros((10, 600), np.float32), "layers.1.bias": np.zeros(10, np.float32)},
     "hidden width 600"),
    (lambda t: {k: v for i in range(7) for k, v in (
        (f"layers.{i}.weight", np.zeros((10 if i == 6 else 8, 100 if i == 0 else 8), np.float32)),
        (f"layers.{i}.bias", np.zeros(10 if i == 6 else 8, np.float32)))}, "expected tensors"),
], ids=["missing-bias", "extra-tensor", "wrong-classes", "wrong-input", "nan", "huge", "int-dtype", "too-wide",
        "too-deep"])
def test_models_outside_the_family_are_rejected(ev, family, tmp_path: Path, breakage, reason: str) -> None:
    path = write_state(family, tmp_path / "model.safetensors", breakage(_good(family)))
    with pytest.raises(ev.InvalidPredictions, match=reason):
        ev.load_model(path)


def test_a_safetensors_header_that_lies_is_rejected(ev, tmp_path: Path) -> None:
    """(No file, empty, garbage and oversized files: tests/ml_tasks/test_tasks.py.)"""
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\": 1}       ")
    with pytest.raises(ev.InvalidPredictions, match="not a readable safetensors file"):
        ev.load_model(path)


# --- the attack: fixed, identical on val and test, not fooled by gradient masking ---------------------------------

def test_constant_network_scores_zero_on_val_and_test_with_the_same_attack(prepared: ws.PreparedTask, spec: TaskSpec,
                                                                          ev, family, tmp_path: Path,
                                                                          monkeypatch) -> None:
    """The trivial overlay fails the clean floor on both phases; both phases build the same attack.

    The attack stages are recorded, not run (a constant network survives them all, so running them is
    pure cost); that ART accepts the constant network at all is checked by building every stage."""
    code = code_copy(prepared, tmp_path / "code", overlay_dir=spec.task_dir / "checks" / "constant")
    result = run_driver(code, *phase_args(prepared, "val", tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    seen = []
    real_stages = ev.stages

    def recording(classifier):
        seen.append(ev.attack_settings())
        for _, build in real_stages(classifier):
            build()  # logits like [0, .., 1, .., 0] must not make ART refuse the network
        return []

    monkeypatch.setattr(ev, "stages", recording)
    scores = {phase: ev.evaluate(phase, tmp_path / "out", prepared.labels_dir) for phase in ("val", "test")}
    assert len(seen) == 2 and seen[0] == seen[1]  # the same threat model and attack on both phases
    assert [name for name, _, _ in seen[0]] == ["apgd_ce", "apgd_dlr", "square"]
    assert all(kw["eps"] == ev.EPS == 0.15 and kw["norm"] == np.inf for _, _, kw in seen[0])
    for metrics in scores.values():
        assert metrics["clean_floor_met"] == 0.0 and metrics["robust_accuracy"] == 0.0
        assert 0.05 < metrics["clean_accuracy"] < 0.15  # only as accurate as a constant
        assert not spec.metric.better(metrics["robust_accuracy"], spec.metric.floor)


@pytest.mark.slow
def test_saturated_logits_do_not_hide_the_network(family, ev, prepared: ws.PreparedTask, val_slice) -> None:
    """Scaling the logits makes cross-entropy gradients vanish; the DLR stage is scale-invariant."""
    net, _, _ = train_plain(family, prepared)
    tensors = family.to_tensors(net)
    scale = 0.99 * family.MAX_ABS_WEIGHT / max(np.abs(tensors["layers.1.weight"]).max(), np.abs(tensors["layers.1.bias"]).max())
    masked = {**tensors, "layers.1.weight": tensors["layers.1.weight"] * scale, "layers.1.bias": tensors["layers.1.bias"] * scale}
    plain = ev.robustness(family.from_tensors(tensors), *val_slice)
    scaled = ev.robustness(family.from_tensors(masked), *val_slice)
    assert scaled["clean_accuracy"] == plain["clean_accuracy"]
    assert scaled["robust_after_apgd_ce"] > plain["robust_after_apgd_ce"] + 0.1  # the masking is real...
    assert scaled["robust_accuracy_unconstrained"] <= plain["robust_accuracy_unconstrained"] + 1.5 / SLICE  # ...and caught


@pytest.mark.slow
def test_a_steep_ramp_quantizer_is_scored_at_its_true_robustness(family, ev, prepared: ws.PreparedTask,
                                                                 val_slice) -> None:
    """A ReLU net that binarizes every pixel (gradient zero almost everywhere): the gradient-free stage
    brings its score down to its exact robust accuracy, which this test computes by enumeration."""
    import torch
    from sklearn.linear_model import LogisticRegression

    frame = pd.read_csv(prepared.public_dir / "train.csv")
    x = frame[family.FEATURES].to_numpy(np.float64) / 16
    steep, threshold = 1000.0, 0.47  # no pixel value k/16 lies on the ramp
    clf = LogisticRegression(C=1.0, max_iter=3000).fit((x > threshold).astype(float), frame["label"])
    w, c = clf.coef_, clf.intercept_
    n = family.INPUT_DIM
    w0, b0 = np.zeros((2 * n, n)), np.zeros(2 * n)
    for i in range(n):  # unit 2i - unit 2i+1 = clip(steep * (x_i - threshold) + 0.5, 0, 1)
        w0[2 * i, i] = w0[2 * i + 1, i] = steep
        b0[2 * i], b0[2 * i + 1] = -steep * threshold + 0.5, -steep * threshold - 0.5
    w1 = np.zeros((10, 2 * n))
    w1[:, 0::2], w1[:, 1::2] = w, -w
    net = family.from_tensors({k: v.astype(np.float32) for k, v in
                               {"layers.0.weight": w0, "layers.0.bias": b0, "layers.1.weight": w1, "layers.1.bias": c}.items()})

    xs, ys = val_slice
    flat = xs.reshape(len(xs), n).astype(np.float64)
    bits, flippable = (flat > threshold).astype(float), np.abs(flat - threshold) < ev.EPS - 1e-3
    exact = []
    for b, f, label in zip(bits, flippable, ys):
        margins = [(w[label] - w[j]) @ b + c[label] - c[j] - sum(((w[label] - w[j]) * b - np.minimum(0, w[label] - w[j]))[f])
                   for j in range(10) if j != label]
        exact.append(int(np.argmax(w @ b + c)) == label and min(margins) > 0)
    with torch.no_grad():
        assert (net(torch.from_numpy(xs)).argmax(1).numpy() == np.argmax(bits @ w.T + c, axis=1)).all()

    metrics = ev.robustness(net, xs, ys)
    truth = float(np.mean(exact))
    assert metrics["robust_after_apgd_dlr"] > truth + 0.05  # gradient attacks alone are fooled...
    assert truth <= metrics["robust_accuracy_unconstrained"] <= truth + 1.5 / SLICE  # ...Square is not
