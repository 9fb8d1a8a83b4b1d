"""The privacy task (membership inference): the split, nothing agent-visible that encodes membership, the
evaluator's TPR at low FPR and its floor, hostile scores, the driver's checks of what the attack returns.

Drivers run as plain subprocesses from a copy of the pristine baseline. The checks every task gets (record,
floor, hostile predictions, reference): tests/ml_tasks/test_tasks.py.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from researchbench.benchmark.tasks.manifest import load_task

from conftest import HANG_TIMEOUT_S
from task_kit import TASK_ENV, baseline_run, driver_rejects, ev, prepared, task_dir

TASK = "privacy"
TASK_DIR = task_dir(TASK)
WORLDS = {"val": "public_dir", "test": "test_inputs_dir"}


def harness_module(name: str):
    """A harness-owned module of the baseline (target_model, numerics) under a unique name."""
    spec = importlib.util.spec_from_file_location(f"privacy_{name}", TASK_DIR / "baseline" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def world(prepared, phase: str) -> tuple[dict, dict, np.ndarray]:
    """(target weights, candidates, membership in candidate order) of one world."""
    folder = getattr(prepared, WORLDS[phase])
    candidates = load(folder / "candidates.npz")
    labels = pd.read_csv(prepared.labels_dir / f"{phase}_membership.csv")
    assert labels["id"].tolist() == candidates["id"].tolist()
    return load(folder / "target_model.npz"), candidates, labels["member"].to_numpy(bool)


def rows(x: np.ndarray) -> set[bytes]:
    return {r.tobytes() for r in x}


def test_files_and_the_split(prepared) -> None:
    assert sorted(p.name for p in prepared.public_dir.iterdir()) == ["aux.npz", "candidates.npz", "target_model.npz"]
    assert sorted(p.name for p in prepared.test_inputs_dir.iterdir()) == ["candidates.npz", "target_model.npz"]
    aux = load(prepared.public_dir / "aux.npz")
    assert sorted(aux) == ["x", "y"] and aux["x"].shape == (397, 100)
    (_, val, _), (_, test, _) = world(prepared, "val"), world(prepared, "test")
    for candidates in (val, test):
        assert sorted(candidates) == ["id", "x", "y"] and candidates["x"].shape == (500, 100)
        assert not rows(candidates["x"]) & rows(aux["x"])  # no candidate is in the auxiliary pool
    assert not rows(val["x"]) & rows(test["x"]) and not set(val["id"]) & set(test["id"])
    assert len(rows(aux["x"]) | rows(val["x"]) | rows(test["x"])) == 1397  # the other 400 digits stay private


@pytest.mark.parametrize("phase", ["val", "test"])
def test_nothing_agent_visible_encodes_membership(prepared, ev, phase: str) -> None:
    """The file is in id order and the ids carry no signal; the weights file holds nothing but the four
    weight arrays. The members are a hidden share of the candidates (0.35-0.65, each class its own rate)."""
    target, candidates, member = world(prepared, phase)
    assert len(member) == 500 and 0.3 < member.mean() < 0.7
    assert np.all(np.diff(candidates["id"]) > 0)
    assert abs(ev.score(member, candidates["id"].astype(float))["auc"] - 0.5) < 0.07
    assert {k: v.shape for k, v in target.items()} == {"w1": (100, 128), "b1": (128,), "w2": (128, 10), "b2": (10,)}


REFIT = """
import sys
sys.path.insert(0, sys.argv[1])
import numerics
numerics.pin()  # the numerics prepare trained with: one thread, portable kernels
import importlib.util
import numpy as np
import target_model
spec = importlib.util.spec_from_file_location("privacy_prepare", sys.argv[2])
prepare = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = prepare
spec.loader.exec_module(prepare)
phase, folder = sys.argv[3], sys.argv[4]
x, y, _, worlds = prepare.draw_worlds()
world = worlds[phase]
candidates, target = np.load(f"{folder}/candidates.npz"), np.load(f"{folder}/target_model.npz")
assert np.array_equal(candidates["id"], world.ids) and np.array_equal(candidates["x"], x[world.rows])
rows = prepare.training_rows(world)
refit = prepare.train_hidden(x[rows], y[rows], world.recipe, world.state)
default = target_model.train(x[rows], y[rows], world.state)
print("same" if all(np.array_equal(refit[k], target[k]) for k in target_model.SHAPES) else "differs",
      "default-differs" if not np.allclose(default["w1"], target["w1"]) else "default-same")
"""


@pytest.mark.parametrize("phase", ["val", "test"])
def test_each_target_is_its_hidden_recipe_fitted_on_its_members_and_private_images(prepared, ev, phase: str) -> None:
    """Refitting the world's hidden recipe on its members and private images, with the world's secret state
    and the pinned numerics, gives the published weights bit for bit (the documented recipe does not); the
    target remembers its members: they score above the non-members under the loss attack."""
    result = subprocess.run([sys.executable, "-c", REFIT, str(TASK_DIR / "baseline"), str(TASK_DIR / "prepare.py"),
                             phase, str(getattr(prepared, WORLDS[phase]))],
                            capture_output=True, text=True, timeout=HANG_TIMEOUT_S, env=TASK_ENV)
    assert result.stdout.split() == ["same", "default-differs"], result.stderr
    target, candidates, member = world(prepared, phase)
    model = harness_module("target_model")
    loss = -model.log_softmax(model.logits(target, candidates["x"]))[np.arange(len(member)), candidates["y"]]
    assert ev.score(member, -loss)["auc"] > 0.6


def test_the_worlds_are_independent_draws() -> None:
    """Val and test differ in their recipe, their member share and their private images (unseen in val)."""
    spec = importlib.util.spec_from_file_location("privacy_prepare_draws", TASK_DIR / "prepare.py")
    prepare = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = prepare
    spec.loader.exec_module(prepare)
    _, _, aux, worlds = prepare.draw_worlds()
    val, test = worlds["val"], worlds["test"]
    assert val.recipe != test.recipe and val.member.mean() != test.member.mean()
    assert not set(val.private) & set(test.private) and not set(val.private) & set(aux)
    assert not set(val.private) & (set(val.rows) | set(test.rows))


def test_numerics_must_be_pinned_before_numpy_loads() -> None:
    with pytest.raises(RuntimeError, match="before numpy is imported"):
        harness_module("numerics").pin()


def test_floor_is_chance_and_constant_or_random_scores_stay_there(prepared, ev) -> None:
    spec = prepared.spec
    for phase in ("val", "test"):
        _, _, member = world(prepared, phase)
        constant = ev.score(member, np.zeros(len(member)))
        assert constant["tpr_at_10pct_fpr"] == pytest.approx(spec.metric.floor, abs=1e-12) and constant["auc"] == 0.5
        rng = np.random.default_rng(0)
        random = [ev.score(member, rng.random(len(member)))["tpr_at_10pct_fpr"] for _ in range(50)]
        assert abs(np.mean(random) - spec.metric.floor) < 0.02
        assert ev.score(member, member.astype(float))["tpr_at_10pct_fpr"] == 1.0
        assert ev.score(member, -member.astype(float))["tpr_at_10pct_fpr"] == 0.0


def test_tpr_at_fpr_by_hand(ev) -> None:
    """Ten non-members scored 0..9, ten members: five at 8.5 and five at -1. Flagging 10% of the
    non-members (the one at 9) catches the five at 8.5: TPR 0.5 at FPR 0.1, the top of that step.
    Ties between a member and a non-member count as randomly ordered (the line across the tie)."""
    member = np.array([0] * 10 + [1] * 10, bool)
    scores = np.concatenate([np.arange(10.0), [8.5] * 5, [-1.0] * 5])
    metrics = ev.score(member, scores)
    assert metrics["tpr_at_10pct_fpr"] == 0.5 and metrics["tpr_at_5pct_fpr"] == 0.0
    tied = np.concatenate([np.arange(10.0), [9.0] * 2, [-1.0] * 8])  # 2 members tied with the top non-member
    assert ev.score(member, tied)["tpr_at_10pct_fpr"] == pytest.approx(0.2)
    assert ev.score(member, tied)["tpr_at_5pct_fpr"] == pytest.approx(0.1)


@pytest.mark.parametrize("content, reason", [
    ("id,score\n{ids0},inf\n", "NaN or infinite"),
    ("id,score\n{ids0},\n", "missing, NaN or infinite"),
    ("id,score\n{ids0},x\n", "missing, NaN or infinite"),
    ("id,score\n1.5,1\n", "must hold integers"),
    ("id,member\n{ids0},1\n", "lacks columns ['score']"),
], ids=["inf", "empty", "text", "float-id", "columns"])
def test_evaluator_rejects_hostile_scores(prepared, ev, tmp_path: Path, content, reason: str) -> None:
    """Beyond tests/ml_tasks/test_tasks.py's hostile cases (no file, empty, binary, oversized, NaN, foreign, duplicated,
    missing rows), which also hold the evaluator's CLI to one line and no metrics."""
    ids = pd.read_csv(prepared.labels_dir / "val_membership.csv")["id"].tolist()
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "scores.csv").write_text(content.format(ids0=ids[0]))
    with pytest.raises(ev.InvalidPredictions, match=re.escape(reason)):
        ev.evaluate("val", folder, prepared.labels_dir)


def test_baseline_driver_writes_one_score_per_candidate(prepared) -> None:
    run = baseline_run(TASK)  # its score against the record: tests/ml_tasks/test_tasks.py
    assert run.predictions is not None, run.outcome.bug_reason
    written = pd.read_csv(run.predictions / "scores.csv")
    assert written["id"].tolist() == world(prepared, "val")[1]["id"].tolist()


@pytest.mark.parametrize("body, reason", [
    ("return np.zeros(499)", "expected (500,)"),
    ("return np.full(500, np.nan)", "500 NaN or infinite"),
    ("return {'a': 1}", "must return"),
    ("return np.zeros((500, 2))", "expected (500,)"),
], ids=["short", "nan", "dict", "2d"])
def test_driver_rejects_what_the_attack_returns(prepared, tmp_path: Path, body: str, reason: str) -> None:
    attack = f"import numpy as np\ndef attack(target, cx, cy, ax, ay, params, seed):\n    {body}\n"
    driver_rejects(prepared, tmp_path, {"attack.py": attack}, reason, output="scores.csv")


def test_description_states_the_metric_and_the_recipe() -> None:
    text = load_task(TASK_DIR).description_text()  # its budget placeholders rendered from the manifest's
    words = " ".join(text.split())
    assert "`tpr_at_10pct_fpr`" in text and "higher is better" in text and "120 CPU-seconds" in words
    assert "200 epochs" in words and "L2 penalty 1e-4" in words  # the documented recipe (target_model.RECIPE)
    assert "it is **not** the recipe any target was trained with" in words  # the targets' own recipes are secret
    assert "labels/" not in text and "evaluate.py" not in text
