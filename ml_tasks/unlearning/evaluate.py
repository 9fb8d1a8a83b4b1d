"""Score the unlearning task: retained accuracy and a membership-inference gap, run by the evaluator.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it. Reads only
`<predictions-dir>/model.npz`: the unlearned weights of the fixed 100-128-10 ReLU MLP (w1 (100, 128),
b1 (128,), w2 (128, 10), b2 (10,), finite). It is loaded with allow_pickle=False after its size and
entries are checked; anything else prints one line to stderr and exits 1 without writing metrics.
The evaluator computes the model's outputs itself (logits = relu(x w1 + b1) w2 + b2), so nothing the
agent's code does at prediction time can treat the audited images specially.

On the phase's hidden images (labels/eval_<phase>.npz):
  retain_acc   accuracy on retained training images agent code never saw (half per phase)
  heldout_acc  accuracy on never-trained validation / test images
  forget_acc   accuracy on the forget set
  mia_auc_loss   AUROC of a loss-threshold membership-inference attack (Yeom et al. 2018) telling the
                 forget set (label 1) from the held-out images (label 0), score = -cross-entropy loss
  mia_auc_label  AUROC of the label-only attack (score = 1 if the model classifies the image
                 correctly): catches a model that only softens its confidence on forgotten images
  mia_gap        max over the two attacks of 2 * |AUROC - 0.5|, in [0, 1]: 0 when forgotten images
                 look exactly like never-seen ones; over-forgetting (forgotten images *worse* than
                 unseen ones, itself a membership signal) counts too
  unlearning_score = retain_acc * heldout_acc * (1 - mia_gap)     primary, higher is better
Utility counts both what the model keeps (retained images) and how it generalizes (never-trained
images), as the NeurIPS 2023 unlearning challenge's utility does: forgetting by degrading the whole
model (shrinking every weight until members and non-members look alike) is paid for in heldout_acc.
A constant output has mia_gap near 0 but accuracies near 0.1, so it scores about 0.01. The command
line and the one-line error contract come from the harness's `task_runtime` package.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import numpy as np

from task_runtime import InvalidPredictions, evaluator_main

SHAPES = {"w1": (100, 128), "b1": (128,), "w2": (128, 10), "b2": (10,)}
MAX_BYTES = 1 << 20  # the weights are 14,218 floats (about 40 KB as float32)


def load_weights(path: Path) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise InvalidPredictions(f"{path.name} was not written")
    if path.stat().st_size > MAX_BYTES:
        raise InvalidPredictions(f"{path.name} is larger than {MAX_BYTES} bytes")
    try:
        with zipfile.ZipFile(path) as archive:
            entries = {i.filename: i.file_size for i in archive.infolist()}
        if set(entries) != {f"{k}.npy" for k in SHAPES} or sum(entries.values()) > 4 * MAX_BYTES:
            raise InvalidPredictions(f"{path.name} must hold exactly the arrays {', '.join(SHAPES)}")
        with np.load(path, allow_pickle=False) as data:
            weights = {k: data[k] for k in SHAPES}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise InvalidPredictions(f"{path.name} is not a readable .npz of plain arrays ({type(exc).__name__})") from None
    for key, shape in SHAPES.items():
        array = weights[key]
        if array.shape != shape or array.dtype.kind not in "fiu":
            raise InvalidPredictions(f"{path.name}: {key} must be a numeric array of shape {shape}, got {array.shape}")
        if not np.isfinite(array).all():
            raise InvalidPredictions(f"{path.name}: {key} holds NaN or infinite values")
        weights[key] = array.astype(np.float64)
    return weights


def losses_and_predictions(weights: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hidden = np.maximum(x.astype(np.float64) @ weights["w1"] + weights["b1"], 0.0)
    logits = hidden @ weights["w2"] + weights["b2"]
    rows = np.arange(len(y))
    with np.errstate(over="ignore", invalid="ignore"):
        # loss = log(1 + sum_{j != y} exp(m_j)) with m = logits - logit_y, computed without rounding
        # 1 + tiny to 1: confident members and confident non-members must keep distinct losses.
        margins = logits - logits[rows, y][:, None]
        margins[rows, y] = -np.inf
        top = np.maximum(margins.max(axis=1), 0.0)
        rest = np.exp(margins - top[:, None]).sum(axis=1)
        loss = np.where(top > 0, top + np.log(np.exp(-top) + rest), np.log1p(rest))
    return loss, logits.argmax(axis=1)


def auroc(members: np.ndarray, nonmembers: np.ndarray) -> float:
    """P(score of a member > score of a non-member), ties counted half (Mann-Whitney U)."""
    from scipy.stats import rankdata

    ranks = rankdata(np.concatenate([members, nonmembers]))
    n1, n0 = len(members), len(nonmembers)
    return float((ranks[:n1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def score(weights: dict[str, np.ndarray], data: dict[str, np.ndarray]) -> dict[str, float]:
    results = {}
    for part in ("forget", "heldout", "retain"):
        results[part] = losses_and_predictions(weights, data[f"{part}_x"], data[f"{part}_y"])
    acc = {part: float((pred == data[f"{part}_y"]).mean()) for part, (_, pred) in results.items()}
    correct = {part: (pred == data[f"{part}_y"]).astype(float) for part, (_, pred) in results.items()}
    auc_loss = auroc(-results["forget"][0], -results["heldout"][0])
    auc_label = auroc(correct["forget"], correct["heldout"])
    gap = 2.0 * max(abs(auc_loss - 0.5), abs(auc_label - 0.5))
    return {"unlearning_score": acc["retain"] * acc["heldout"] * (1.0 - gap), "retain_acc": acc["retain"],
            "heldout_acc": acc["heldout"], "forget_acc": acc["forget"], "mia_auc_loss": auc_loss,
            "mia_auc_label": auc_label, "mia_gap": gap}


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    weights = load_weights(predictions_dir / "model.npz")
    with np.load(labels_dir / f"eval_{phase}.npz", allow_pickle=False) as data:
        return score(weights, {k: data[k] for k in data.files})


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Score unlearned weights (retained x held-out accuracy x (1 - MIA gap)).", argv)


if __name__ == "__main__":
    sys.exit(main())
