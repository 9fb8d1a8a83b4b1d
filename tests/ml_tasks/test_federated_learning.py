"""The federated_learning task's own checks: non-IID clients, the floor, the evaluator's label rules, and the
simulation driver against hostile code (run as a plain subprocess from a copy of the pristine baseline).
The checks every task gets: tests/ml_tasks/test_tasks.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from task_kit import (STASH_AND_SIGNAL_ATTEMPTS, code_copy, ev, evaluate, evaluate_ok, prepare_again, prepared,
                      prepared_digest, run_driver, task_dir)

TASK = "federated_learning"
TASK_DIR = task_dir(TASK)


def test_prepare_is_deterministic_and_clients_are_non_iid(prepared, tmp_path: Path) -> None:
    assert prepare_again(prepared, tmp_path / "again") == prepared_digest(prepared)
    sizes, classes = [], []
    for k in range(10):
        with np.load(prepared.public_dir / f"client{k}.npz") as shard:
            sizes.append(len(shard["y"]))
            assert shard["x"].shape == (len(shard["y"]), 81) and 0.0 <= shard["x"].min() <= shard["x"].max() <= 1.0
            counts = np.bincount(shard["y"], minlength=10)
            classes.append(int((counts >= 0.1 * counts.sum()).sum()))
    assert sum(sizes) == 1078 and min(sizes) >= 30
    assert np.median(classes) <= 4  # label skew: most clients hold a few classes
    with np.load(prepared.public_dir / "val_inputs.npz") as val:
        assert set(val.files) == {"id", "x"} and val["x"].shape[1] == 81


def test_floor_is_the_best_constant_class_on_test(prepared, ev) -> None:
    truth = pd.read_csv(prepared.labels_dir / "test_labels.csv")
    scores = [ev.score(ev.align(pd.DataFrame({"id": truth["id"], "label": c}), truth))["accuracy"] for c in range(10)]
    assert max(scores) == pytest.approx(prepared.spec.metric.floor, abs=1e-12)


@pytest.mark.parametrize("frame, reason", [
    (lambda t: t.assign(label=-1), "labels must lie"),
    (lambda t: t.assign(label=0.5), "must hold integers"),
    (lambda t: t.assign(label=np.inf), "must hold integers"),
    (lambda t: t.rename(columns={"y": "label_"}), "lacks columns"),
], ids=["negative", "fraction", "inf", "no-label"])
def test_evaluator_rejects_malformed_predictions(prepared, ev, tmp_path: Path, frame, reason: str) -> None:
    """Beyond tests/ml_tasks/test_tasks.py's hostile cases (no file, binary, NaN, foreign, duplicated, missing rows)."""
    truth = pd.read_csv(prepared.labels_dir / "val_labels.csv")
    (tmp_path / "p").mkdir()
    out = frame(truth)
    out.drop(columns=[c for c in ("y",) if c in out.columns]).to_csv(tmp_path / "p" / "predictions.csv", index=False)
    with pytest.raises(ev.InvalidPredictions, match=reason):
        ev.evaluate("val", tmp_path / "p", prepared.labels_dir)


def test_evaluator_cli_scores_and_rejects(prepared, tmp_path: Path) -> None:
    truth = pd.read_csv(prepared.labels_dir / "val_labels.csv")
    (tmp_path / "p").mkdir()
    truth.rename(columns={"y": "label"}).to_csv(tmp_path / "p" / "predictions.csv", index=False)
    assert evaluate_ok(prepared.spec, "val", tmp_path / "p", prepared.labels_dir, tmp_path)["accuracy"] == 1.0
    # val predictions are not test predictions: every id is checked
    result = evaluate(prepared.spec, "test", tmp_path / "p", prepared.labels_dir, tmp_path / "m2.json")
    assert result.returncode == 1 and "expected ids missing" in result.stderr and not (tmp_path / "m2.json").exists()


HOSTILE_FEDLEARN = '''
import ctypes, hashlib, os, subprocess
import numpy as np

def attempt(name, action):
    try:
        action()
    except (PermissionError, OSError):
        return
    raise RuntimeError(f"LEAK: {name} was allowed")

def probe_isolation(data):
    for k in range(10):
        attempt(f"client {k} file", lambda: open(os.path.join(data, f"client{k}.npz"), "rb").read(1))
    attempt("listdir", lambda: os.listdir(data))
    attempt("subprocess", lambda: subprocess.run(["true"]))
    attempt("ctypes", lambda: ctypes.CDLL(None).getpid())
    attempt("parent memory", lambda: open(f"/proc/{os.getppid()}/maps", "rb"))
''' + STASH_AND_SIGNAL_ATTEMPTS + '''
def fingerprint(x):
    return np.frombuffer(hashlib.sha256(np.ascontiguousarray(x).tobytes()).digest()[:8], dtype=np.int64).astype(float)

def init_model(params, device):
    return {"round": np.array([0.0])}

def client_update(model, client_state, x, y, params, device):
    probe_isolation(params["data"])
    if client_state is not None:  # a client's private state comes back to it, and only to it
        assert np.array_equal(client_state["me"], fingerprint(x)), "client state handed to another client"
        assert client_state["round"][0] == model["round"][0] - 1, "client state from the wrong round"
    return {"n": np.array([float(len(y))])}, {"me": fingerprint(x), "round": model["round"].copy()}

def server_aggregate(model, updates, sizes, server_state, params, device):
    probe_isolation(params["data"])
    assert len(updates) == 10 and [u["n"][0] for u in updates] == [float(s) for s in sizes]
    rnd = model["round"][0]
    assert (server_state is None) == (rnd == 0) and (server_state is None or server_state["round"][0] == rnd)
    return {"round": model["round"] + 1}, {"round": model["round"] + 1}

def predict(model, x, params, device):
    assert model["round"][0] == params["rounds"], f"{model['round'][0]} rounds instead of {params['rounds']}"
    return np.zeros(len(x), dtype=int)
'''


@pytest.mark.parametrize("rounds", [1, 3], ids=["the-task", "states-across-rounds"])
def test_driver_owns_rounds_isolates_clients_and_locks_out_data(prepared, tmp_path: Path, rounds: int) -> None:
    """The task has one round; a copy of the driver with three checks that private states go back to
    their owner only, so the machinery stays right for a later version with more rounds."""
    params = json.dumps({"data": str(prepared.public_dir), "rounds": rounds})
    code = code_copy(prepared, tmp_path / "code", {"fedlearn.py": HOSTILE_FEDLEARN, "params.json": params})
    driver = (code / "driver.py").read_text()
    assert "\nROUNDS = 1 " in driver
    (code / "driver.py").write_text(driver.replace("\nROUNDS = 1 ", f"\nROUNDS = {rounds} "))
    result = run_driver(code, "--phase", "val", "--data", str(prepared.public_dir), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert "LEAK" not in result.stdout + result.stderr
    assert f"after {rounds} round(s) ({1 + 11 * rounds + 1} isolated calls)" in result.stdout
    assert set(pd.read_csv(tmp_path / "out" / "predictions.csv")["label"]) == {0}


def test_driver_rejects_an_update_over_the_message_budget(prepared, tmp_path: Path) -> None:
    fedlearn = (HOSTILE_FEDLEARN.replace('return {"n": np.array([float(len(y))])}',
                                         'return {"n": np.array([float(len(y))]), "raw": np.zeros(5_000)}'))
    code = code_copy(prepared, tmp_path / "code", {"fedlearn.py": fedlearn,
                                                   "params.json": json.dumps({"data": str(prepared.public_dir)})})
    result = run_driver(code, "--phase", "val", "--data", str(prepared.public_dir), "--out", str(tmp_path / "out"))
    assert result.returncode == 1 and "driver error: round 0 client 0" in result.stderr, result.stderr
    assert "the budget is 5000" in result.stderr and not (tmp_path / "out" / "predictions.csv").exists()


def test_description_states_the_limits() -> None:
    text = (TASK_DIR / "description.md").read_text()
    assert "5,000 per message" in text and "**one round**" in text and "Dirichlet(0.1)" in text
    assert "labels/" not in text and "evaluate.py" not in text
