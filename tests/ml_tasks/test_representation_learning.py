"""The representation_learning task's own checks: data separation, floor, the harness-owned probe, hostile
embeddings, and a driver whose embeddings do not depend on the machine (run as a plain subprocess from a copy
of the pristine baseline). The checks every task gets: tests/ml_tasks/test_tasks.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import SESSION_START_ENV
from task_kit import (code_copy, driver_rejects, ev, evaluator_rejects, phase_args, prepare_again, prepared,
                      prepared_digest, run_driver, task_dir)

TASK = "representation_learning"
TASK_DIR = task_dir(TASK)


def inputs(prepared, phase: str) -> dict:
    folder = prepared.test_inputs_dir if phase == "test" else prepared.public_dir
    name = {"probe_train": "probe_train_inputs", "val": "val_inputs", "test": "test_inputs"}[phase]
    with np.load(folder / f"{name}.npz") as data:
        return {k: data[k] for k in data.files}


def test_prepare_is_deterministic_and_probe_sets_are_disjoint(prepared, tmp_path: Path) -> None:
    assert prepare_again(prepared, tmp_path / "again") == prepared_digest(prepared)
    assert sorted(p.name for p in prepared.public_dir.iterdir()) == \
        ["probe_train_inputs.npz", "unlabeled.npz", "val_inputs.npz"]  # test inputs only in the test phase
    sets = {p: inputs(prepared, p) for p in ("probe_train", "val", "test")}
    with np.load(prepared.public_dir / "unlabeled.npz") as unlabeled:
        assert unlabeled.files == ["x"]  # no labels, no ids
        rows = {row.tobytes() for row in unlabeled["x"]}
    ids = [set(s["id"].tolist()) for s in sets.values()]
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    for s in sets.values():  # no image is shared between any two sets, unlabeled included
        assert set(s) == {"id", "x"} and s["x"].shape[1] == 256
        assert not {row.tobytes() for row in s["x"]} & rows
        rows |= {row.tobytes() for row in s["x"]}


def embeddings_frame(prepared, phase: str, embed) -> pd.DataFrame:
    frames = []
    for name in ("probe_train", phase):
        data = inputs(prepared, name)
        values = embed(data["x"])
        frame = pd.DataFrame(values, columns=[f"e{j}" for j in range(values.shape[1])])
        frames.append(frame.assign(set=name, id=data["id"])[["set", "id", *frame.columns]])
    return pd.concat(frames, ignore_index=True)


def score(prepared, ev, phase: str, frame: pd.DataFrame, tmp_path: Path) -> dict:
    (tmp_path / "p").mkdir(exist_ok=True)
    frame.to_csv(tmp_path / "p" / "embeddings.csv", index=False)
    return ev.evaluate(phase, tmp_path / "p", prepared.labels_dir)


def test_floor_is_the_best_constant_class_and_constant_embeddings_reach_no_further(prepared, ev, tmp_path) -> None:
    truth = pd.read_csv(prepared.labels_dir / "test_labels.csv")
    assert truth["y"].value_counts().max() / len(truth) == pytest.approx(prepared.spec.metric.floor, abs=1e-12)
    for embed in (lambda x: np.ones((len(x), 1)), lambda x: np.zeros((len(x), 32)),
                  lambda x: np.full((len(x), 3), 1e6)):
        metrics = score(prepared, ev, "test", embeddings_frame(prepared, "test", embed), tmp_path)
        assert not prepared.spec.metric.better(metrics["probe_accuracy"], prepared.spec.metric.floor)


def test_raw_pixels_are_a_poor_representation(prepared, ev, tmp_path: Path) -> None:
    """The nuisances work: 32 raw pixels of the canvas's middle rows leave the probe near chance."""
    metrics = score(prepared, ev, "val", embeddings_frame(prepared, "val", lambda x: x[:, 112:144]), tmp_path)
    assert metrics["probe_accuracy"] < 0.35


@pytest.mark.parametrize("mutate, reason", [
    (lambda f: f.assign(e0=1e7), "within"),
    (lambda f: f.assign(set=f["set"].replace("val", "test")), "unexpected set"),
    (lambda f: f.assign(**{f"e{j}": 0.0 for j in range(1, 33)}), "1 <= d <= 32"),
    (lambda f: f.drop(columns="id"), "needs columns"),
    (lambda f: f.assign(id=f["id"] + 0.5), "must hold integers"),
], ids=["huge", "wrong-set", "too-wide", "no-id", "fractional-id"])
def test_evaluator_rejects_malformed_embeddings(prepared, ev, tmp_path: Path, mutate, reason: str) -> None:
    """Beyond tests/ml_tasks/test_tasks.py's hostile cases (no file, binary, NaN, foreign, duplicated, missing rows)."""
    frame = mutate(embeddings_frame(prepared, "val", lambda x: x[:, :8]))
    with pytest.raises(ev.InvalidPredictions, match=reason):
        score(prepared, ev, "val", frame, tmp_path)


def test_val_embeddings_cannot_be_scored_as_test(prepared, tmp_path) -> None:
    (tmp_path / "p").mkdir()
    embeddings_frame(prepared, "val", lambda x: x[:, :8]).to_csv(tmp_path / "p" / "embeddings.csv", index=False)
    assert "unexpected set" in evaluator_rejects(prepared.spec, "test", tmp_path / "p", prepared.labels_dir, tmp_path)


def test_driver_rejects_oversized_embeddings(prepared, tmp_path: Path) -> None:
    encoder = ("import numpy as np\ndef pretrain(x, params, device):\n    return None\n"
               "def embed(encoder, x, params, device):\n    return np.zeros((len(x), 33))\n")
    driver_rejects(prepared, tmp_path, {"encoder.py": encoder}, "1 <= d <= 32", output="embeddings.csv")


PORTABLE = {"ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "OMP_NUM_THREADS", "MKL_NUM_THREADS"}


def test_driver_pins_the_kernels_so_embeddings_do_not_depend_on_the_machine(prepared, tmp_path: Path) -> None:
    """Instruction sets and thread counts change torch's and MKL's rounding, and training grows it into a
    different encoder (0.8067 on one machine, 0.8233 on another, before the pin). Runs that start with
    the lowest instruction sets and one thread, and with the machine's own and three threads, write
    the same bytes. The reference's convolutional encoder (one epoch) exercises convolutions too."""
    files = {"encoder.py": (TASK_DIR / "reference" / "encoder.py").read_text(),
             "params.json": json.dumps({"epochs": 1, "max_shift": 4})}
    machine = {k: v for k, v in SESSION_START_ENV.items() if k not in PORTABLE}
    settings = [{**machine, "ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41",
                 "OMP_NUM_THREADS": "1"}, {**machine, "OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3"}]
    written = []
    for i, env in enumerate(settings):
        code = code_copy(prepared, tmp_path / f"code{i}", files)
        result = run_driver(code, *phase_args(prepared, "val", tmp_path / f"out{i}"), env=env)
        assert result.returncode == 0, result.stderr
        written.append((tmp_path / f"out{i}" / "embeddings.csv").read_bytes())
    assert written[0] == written[1]


def test_description_states_the_limits() -> None:
    text = (TASK_DIR / "description.md").read_text()
    assert "at most\n32 numbers" in text or "at most 32 numbers" in text
    assert "200 labelled embeddings" in text and "LogisticRegression(C=1.0, max_iter=2000)" in text
    assert "labels/" not in text and "evaluate.py" not in text
