"""Score the unlearning task: retained accuracy and a calibrated membership-inference gap, run by the evaluator.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it. Reads only
`<predictions-dir>/model.npz`: the unlearned weights of the fixed 100-H-10 ReLU MLP (w1 (100, H),
b1 (H,), w2 (H, 10), b2 (10,), finite). H is the scale's width, read from the labels (their `hidden`;
labels without it, the lite scale's, mean 128), never from anything agent code writes. It is loaded
with allow_pickle=False after its size and entries are checked; anything else prints one line to stderr
and exits 1 without writing metrics.
The evaluator computes the model's outputs itself (logits = relu(x w1 + b1) w2 + b2), so nothing the
agent's code does at prediction time can treat the audited images specially.

On the phase's hidden images (labels/eval_<phase>.npz):
  retain_acc   accuracy on retained training images agent code never saw (half per phase)
  heldout_acc  accuracy on never-trained validation / test images (of the writers that stay)
  forget_acc   accuracy on the forget set; unseen_acc on the forgotten writer's never-trained images
Two membership-inference attacks tell the forget set (label 1) from never-trained images (label 0), each
run twice: against the held-out images of the writers who stay, and (suffix _writer) against the forgotten
writer's own unseen images, so an edit of the forget images' outputs alone, which leaves what the model
learned from that writer elsewhere, is caught. Each is calibrated per image by reference models: networks
of the same architecture trained on the retained images only, never on a forget image, whose per-image
statistics prepare.py stored with the labels (difficulty calibration: Watson et al. 2022; the per-image
Gaussian scale of LiRA, Carlini et al. 2022). An image is suspicious when the scored model does better on
it than models that never saw it do.
  mia_auc_loss   AUROC of the calibrated loss attack: score = (log-odds of the true class under the
                 model - the references' median log-odds) / the references' sd (log-odds =
                 log(p_y / (1 - p_y)), a decreasing function of the cross-entropy loss)
  mia_auc_label  AUROC of the calibrated label-only attack: score = 1 if the model classifies the
                 image correctly, else 0, minus the fraction of references that do
  mia_gap        max over the four of 2 * |AUROC - 0.5|, in [0, 1]: 0 when forgotten images stand to the
                 references as never-seen ones do; over-forgetting (forgotten images *worse* than the
                 references do on them) counts too
The retrain test (`retrain_auc`) asks, on the forgotten writer's images, whether the model is one more draw
of the references image by image: retrain_auc_forget (the forget set) and retrain_auc_writer (the unseen
images); retrain_gap is max of 2 * |AUROC - 0.5| over the two.
  gap = max(mia_gap, retrain_gap)
  unlearning_score = retain_acc * heldout_acc * (1 - gap)     primary, higher is better
A model retrained without the forget set is, on every image, one more draw of the references: every
AUROC about 0.5. Utility counts both what the model keeps (retained images) and how it generalizes
(never-trained images), as the NeurIPS 2023 unlearning challenge's utility does. A constant output has
accuracies near 0.1, so it scores about 0.01. The command
line and the one-line error contract come from the harness's `task_runtime` package.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import numpy as np

from task_runtime import InvalidPredictions, evaluator_main

LITE_HIDDEN = 128  # the width of labels written without a `hidden` entry (the lite scale's)
MAX_BYTES = 1 << 20  # the weights are 14,218 floats at width 128 (about 57 KB as float32), 56,842 at 512


def shapes(hidden: int = LITE_HIDDEN) -> dict[str, tuple[int, ...]]:
    return {"w1": (100, hidden), "b1": (hidden,), "w2": (hidden, 10), "b2": (10,)}


SHAPES = shapes()


def load_weights(path: Path, hidden: int = LITE_HIDDEN) -> dict[str, np.ndarray]:
    expected = shapes(hidden)
    if not path.is_file():
        raise InvalidPredictions(f"{path.name} was not written")
    if path.stat().st_size > MAX_BYTES:
        raise InvalidPredictions(f"{path.name} is larger than {MAX_BYTES} bytes")
    try:
        with zipfile.ZipFile(path) as archive:
            entries = {i.filename: i.file_size for i in archive.infolist()}
        if set(entries) != {f"{k}.npy" for k in expected} or sum(entries.values()) > 4 * MAX_BYTES:
            raise InvalidPredictions(f"{path.name} must hold exactly the arrays {', '.join(expected)}")
        with np.load(path, allow_pickle=False) as data:
            weights = {k: data[k] for k in expected}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise InvalidPredictions(f"{path.name} is not a readable .npz of plain arrays ({type(exc).__name__})") from None
    for key, shape in expected.items():
        array = weights[key]
        if array.shape != shape or array.dtype.kind not in "fiu":
            raise InvalidPredictions(f"{path.name}: {key} must be a numeric array of shape {shape}, got {array.shape}")
        if not np.isfinite(array).all():
            raise InvalidPredictions(f"{path.name}: {key} holds NaN or infinite values")
        weights[key] = array.astype(np.float64)
    return weights


def log_odds_and_predictions(weights: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per image: the true class's log-odds log(p_y / (1 - p_y)) = logit_y - logsumexp of the other logits
    (computed without rounding, so confident images keep distinct values), and the predicted class."""
    hidden = np.maximum(x.astype(np.float64) @ weights["w1"] + weights["b1"], 0.0)
    logits = hidden @ weights["w2"] + weights["b2"]
    rows = np.arange(len(y))
    others = logits.copy()
    others[rows, y] = -np.inf
    top = others.max(axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        rest = top + np.log(np.exp(others - top[:, None]).sum(axis=1))
    # weights that overflow the logits give inf - inf: such an image counts as undecided (log-odds 0)
    return np.nan_to_num(logits[rows, y] - rest, nan=0.0), logits.argmax(axis=1)


def auroc(members: np.ndarray, nonmembers: np.ndarray) -> float:
    """P(score of a member > score of a non-member), ties counted half (Mann-Whitney U)."""
    from scipy.stats import rankdata

    ranks = rankdata(np.concatenate([members, nonmembers]))
    n1, n0 = len(members), len(nonmembers)
    return float((ranks[:n1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


NONMEMBERS = {"heldout": "", "unseen": "_writer"}  # each attack's non-members, and its metrics' suffix
AUDITED = ("forget", *NONMEMBERS)
WRITER = {"forget": "forget", "unseen": "writer"}  # the forgotten writer's images the retrain test runs on
SD_FLOOR = 0.05  # a reference log-odds sd is at least this (images every reference model agrees on)


def retrain_auc(odds: np.ndarray, reference_odds: np.ndarray) -> float:
    """`odds` (n,): the model's log-odds; `reference_odds` (references, n): theirs. Is the model one more draw of the reference models on these images? For each reference in turn, the
    distance |log-odds - median| / sd of the model's log-odds from the other references' and the same distance
    of that reference's own; the AUROC of the model's distances against theirs (pooled over the references and
    the images) is 0.5 for a model retrained like them, above it for one that strays further from them, image
    by image, than they stray from each other (a model edited towards them on average, not on each image)."""
    mine, theirs = [], []
    for k in range(len(reference_odds)):
        others = np.delete(reference_odds, k, axis=0)
        centre, scale = np.median(others, axis=0), np.maximum(others.std(axis=0, ddof=1), SD_FLOOR)
        mine.append(np.abs(odds - centre) / scale)
        theirs.append(np.abs(reference_odds[k] - centre) / scale)
    return auroc(np.concatenate(mine), np.concatenate(theirs))


def score(weights: dict[str, np.ndarray], data: dict[str, np.ndarray]) -> dict[str, float]:
    odds, correct = {}, {}
    for part in ("forget", "heldout", "unseen", "retain"):
        odds[part], pred = log_odds_and_predictions(weights, data[f"{part}_x"], data[f"{part}_y"])
        correct[part] = (pred == data[f"{part}_y"]).astype(float)
    acc = {part: float(c.mean()) for part, c in correct.items()}
    calibrated = {part: (odds[part] - data[f"{part}_refmed"]) / data[f"{part}_refsd"] for part in AUDITED}
    labels = {part: correct[part] - data[f"{part}_refacc"] for part in AUDITED}
    aucs = {}
    for part, suffix in NONMEMBERS.items():
        aucs[f"mia_auc_loss{suffix}"] = auroc(calibrated["forget"], calibrated[part])
        aucs[f"mia_auc_label{suffix}"] = auroc(labels["forget"], labels[part])
    retrain = {f"retrain_auc_{name}": retrain_auc(odds[part], data[f"{part}_refodds"].T)  # stored a row per image
               for part, name in WRITER.items()}
    mia_gap = 2.0 * max(abs(a - 0.5) for a in aucs.values())
    retrain_gap = 2.0 * max(abs(a - 0.5) for a in retrain.values())
    gap = max(mia_gap, retrain_gap)
    return {"unlearning_score": acc["retain"] * acc["heldout"] * (1.0 - gap), "retain_acc": acc["retain"],
            "heldout_acc": acc["heldout"], "forget_acc": acc["forget"], "unseen_acc": acc["unseen"], **aucs,
            "mia_gap": mia_gap, **retrain, "retrain_gap": retrain_gap, "gap": gap}


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    with np.load(labels_dir / f"eval_{phase}.npz", allow_pickle=False) as data:
        labels = {k: data[k] for k in data.files}
    hidden = int(labels.pop("hidden", LITE_HIDDEN))
    return score(load_weights(predictions_dir / "model.npz", hidden), labels)


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Score unlearned weights (retained x held-out accuracy x (1 - MIA gap)).", argv)


if __name__ == "__main__":
    sys.exit(main())
