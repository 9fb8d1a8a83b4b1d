"""The continual_learning task's own checks: class-incremental splits, the floor, the evaluator's protocol
rules, and the driver's protocol against hostile learners (run as a plain subprocess from a copy of the
pristine baseline). The checks every task gets: tests/ml_tasks/test_tasks.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from task_kit import (STASH_AND_SIGNAL_ATTEMPTS, code_copy, driver_rejects, ev, phase_args, prepare_again, prepared,
                      prepared_digest, run_driver, task_dir)

TASK = "continual_learning"
TASK_DIR = task_dir(TASK)


def labels(prepared, phase: str) -> pd.DataFrame:
    return pd.read_csv(prepared.labels_dir / f"{phase}_labels.csv")


def predictions(frame: pd.DataFrame, label_of) -> pd.DataFrame:
    """Predictions after every split: label_of(split, ids) -> labels."""
    return pd.concat([pd.DataFrame({"after_split": k, "id": frame["id"], "label": label_of(k, frame)})
                      for k in range(5)], ignore_index=True)


# --- data ------------------------------------------------------------------------------------------------------

def test_prepare_is_deterministic_and_splits_are_class_incremental(prepared, tmp_path: Path) -> None:
    assert prepare_again(prepared, tmp_path / "again") == prepared_digest(prepared)
    assert sorted(p.name for p in prepared.public_dir.iterdir()) == \
        [f"train_split{k}.npz" for k in range(5)] + ["val_inputs.npz"]
    for k in range(5):
        with np.load(prepared.public_dir / f"train_split{k}.npz") as split:
            assert set(np.unique(split["y"])) == {2 * k, 2 * k + 1}
            assert split["x"].shape[1] == 144 and 0 <= split["x"].min() and split["x"].max() <= 1
    with np.load(prepared.public_dir / "val_inputs.npz") as val, \
            np.load(prepared.test_inputs_dir / "test_inputs.npz") as test:
        assert set(val.files) == set(test.files) == {"id", "x"}  # no labels next to the inputs
        assert not set(val["id"]) & set(test["id"])


# --- floor and evaluator ------------------------------------------------------------------------------------------

def test_floor_is_the_best_constant_class_on_test(prepared, ev) -> None:
    spec = prepared.spec
    truth = labels(prepared, "test")
    scores = [ev.score(ev.accuracy_matrix(p := predictions(truth, lambda k, f: np.full(len(f), c)), truth), truth, p)
              ["average_accuracy"] for c in range(10)]
    assert max(scores) == pytest.approx(spec.metric.floor, abs=1e-12)
    assert not any(spec.metric.better(s, spec.metric.floor) for s in scores)


def test_perfect_and_forgetful_predictions_score_as_documented(prepared, ev) -> None:
    truth = labels(prepared, "val")
    perfect = predictions(truth, lambda k, f: f["y"])
    metrics = ev.score(ev.accuracy_matrix(perfect, truth), truth, perfect)
    assert metrics["average_accuracy"] == 1.0 and metrics["forgetting"] == 0.0
    # right only on the last split's classes: the textbook catastrophic forgetting
    last_only = predictions(truth, lambda k, f: np.where(f["y"] // 2 == k, f["y"], 2 * k))
    metrics = ev.score(ev.accuracy_matrix(last_only, truth), truth, last_only)
    assert metrics["acc_after_split_0"] == 1.0 and metrics["forgetting"] == pytest.approx(1.0, abs=0.02)
    assert metrics["average_accuracy"] == pytest.approx(0.2, abs=0.02)


@pytest.mark.parametrize("breakage, reason", [
    (lambda p: p[p.after_split < 4], "after_split must cover"),
    (lambda p: p.assign(label=p["label"].where(p.index != 0, 10)), "labels must lie in 0..9"),
    (lambda p: p.assign(label=p["label"].astype(float).where(p.index != 0, 0.5)), "must hold integers"),
    (lambda p: p.drop(columns="after_split"), "lacks columns"),
], ids=["missing-split", "out-of-range", "fraction", "no-column"])
def test_evaluator_rejects_malformed_predictions(prepared, ev, tmp_path: Path, breakage, reason: str) -> None:
    """Beyond tests/ml_tasks/test_tasks.py's hostile cases (no file, binary, NaN, foreign, duplicated, missing rows)."""
    truth = labels(prepared, "val")
    (tmp_path / "p").mkdir()
    breakage(predictions(truth, lambda k, f: f["y"])).to_csv(tmp_path / "p" / "predictions.csv", index=False)
    with pytest.raises(ev.InvalidPredictions, match=reason):
        ev.evaluate("val", tmp_path / "p", prepared.labels_dir)


# --- the driver's protocol against hostile learners -----------------------------------------------------------------

HOSTILE_LEARNER = '''
import ctypes, glob, os, subprocess, sys
import numpy as np

SEEN = []  # a module global: must not survive from one split to the next

def attempt(name, action):
    try:
        action()
    except (PermissionError, OSError, FileNotFoundError):
        return
    raise RuntimeError(f"LEAK: {name} was allowed")

def train_split(state, x, y, classes, split, params, device):
    assert SEEN == [], "a global survived the previous split"
    SEEN.append(split)
    assert set(np.unique(y)) == set(classes) == {2 * split, 2 * split + 1}, (classes, split)
    assert (state is None) == (split == 0)
    if state is not None:
        assert int(state["count"][0]) == split, "splits out of order or state not carried"
    data = params["data"]
    for k in range(5):
        attempt(f"open split {k}", lambda: open(os.path.join(data, f"train_split{k}.npz"), "rb").read(1))
        attempt(f"np.load split {k}", lambda: np.load(os.path.join(data, f"train_split{k}.npz")))
    attempt("listdir", lambda: os.listdir(data))
    attempt("glob", lambda: [open(p, "rb") for p in glob.glob(data + "/*")] or (_ for _ in ()).throw(OSError()))
    attempt("symlink", lambda: (os.symlink(data, "link"), open("link/train_split4.npz", "rb")))
    attempt("subprocess", lambda: subprocess.run(["cat", os.path.join(data, "train_split4.npz")]))
    attempt("os.system", lambda: os.system("true"))
    attempt("ctypes", lambda: ctypes.CDLL(None).getpid())
    attempt("parent memory", lambda: open(f"/proc/{os.getppid()}/mem", "rb"))
''' + STASH_AND_SIGNAL_ATTEMPTS + '''    if split == 4:  # every check passed on every split: now break the state budget
        return {"count": np.array([split + 1]), "stash": np.zeros(20_000)}
    return {"count": np.array([split + 1])}

def predict(state, x, params, device):
    return np.zeros(len(x), dtype=int)
'''


def test_driver_feeds_splits_in_order_locks_out_other_data_and_enforces_the_budget(prepared, tmp_path: Path) -> None:
    """One run: every split checks order, classes, carried state and that each way of reaching other
    data is refused; at split 4 the learner exceeds the state budget, which must stop the run."""
    params = json.dumps({"data": str(prepared.public_dir)})
    code = code_copy(prepared, tmp_path / "code", {"learner.py": HOSTILE_LEARNER, "params.json": params})
    result = run_driver(code, "--phase", "val", "--data", str(prepared.public_dir), "--out", str(tmp_path / "out"))
    assert "LEAK" not in result.stdout + result.stderr
    assert result.returncode == 1 and "driver error: split 4:" in result.stderr, result.stderr
    assert "the budget is 20000" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert [line.split()[2] for line in result.stdout.splitlines() if "classes" in line] == ["0", "1", "2", "3"]
    assert not (tmp_path / "out" / "predictions.csv").exists()


BATCH_DEPENDENT = '''
import numpy as np

def train_split(state, x, y, classes, split, params, device):
    return {"split": np.array([split])}

def predict(state, x, params, device):
    ink = x.sum(axis=1)
    return (ink > np.median(ink)).astype(int)  # relative to the batch: learns from the other inputs
'''


def test_driver_rejects_predictions_that_depend_on_the_other_inputs(prepared, tmp_path: Path) -> None:
    """predict runs in chunks of 32, twice, in two orders: a label that depends on the batch differs."""
    stderr = driver_rejects(prepared, tmp_path, {"learner.py": BATCH_DEPENDENT}, "not a function of each image alone",
                            output="predictions.csv")
    assert "split 0" in stderr


STATE_CACHING = '''
import numpy as np

BUILT = []  # a model computed from the state alone, kept between the predict calls of one split's process

def train_split(state, x, y, classes, split, params, device):
    means = np.zeros((10, x.shape[1]), dtype=np.float32) if state is None else state["means"].copy()
    for c in classes:
        means[c] = x[y == c].mean(axis=0)
    return {"means": means}

def predict(state, x, params, device):
    if not BUILT:
        BUILT.append(state["means"] / (np.linalg.norm(state["means"], axis=1, keepdims=True) + 1e-9))
        print("built the model once from the state")
    scores = x @ BUILT[0].T
    return scores.argmax(axis=1)
'''


def test_a_model_built_from_the_state_may_be_cached_between_predict_calls(prepared, tmp_path: Path) -> None:
    """Issue 27 (greedy's answerer): whether caching what is computed from the state alone breaks the
    per-image rule was unclear. It does not: such a learner runs, and is built once per split."""
    code = code_copy(prepared, tmp_path / "code", {"learner.py": STATE_CACHING})
    result = run_driver(code, *phase_args(prepared, "val", tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("built the model once from the state") == 5
    assert (tmp_path / "out" / "predictions.csv").is_file()


def test_every_image_draws_its_own_condition_from_its_splits_style(prepared) -> None:
    """4.0.0: no two training images of a split share a condition, and the styles differ between splits."""
    import importlib.util

    module_spec = importlib.util.spec_from_file_location("cl_prepare", TASK_DIR / "prepare.py")
    gen = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(gen)
    data = gen.generate()
    train, cond, style = data["parts"]["train"], data["conditions"], data["style"]
    for k in range(5):
        rows = train[style[train] == k]
        assert len(np.unique(cond["rotation"][rows])) == len(rows) and len(np.unique(cond["phase"][rows])) == len(rows)
    assert len({round(s["rotation"], 6) for s in data["styles"]}) == 5


def test_description_states_the_limits_and_hides_the_harness() -> None:
    text = (TASK_DIR / "description.md").read_text()
    assert "20,000 numbers" in text and "train_split{k}.npz" in text
    assert "depend on its own image only" in text
    assert "labels/" not in text and "evaluate.py" not in text and "test_inputs" not in text
