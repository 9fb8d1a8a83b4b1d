"""federated_learning's 1.0: every scored image matched against the training digits redrawn through its own effects.

    python benchmarks/oracle_federated_learning.py

The generator (ml_tasks/federated_learning/prepare.py, version 6.0.0) is known: every device is a hidden
distribution of per-image effects, and each image got its own draw from its device's distribution: where
the 8x8 digit sits on the 9x9 canvas, its tilt and slant, how its strokes are thickened, the device's
response to ink (a contrast power, on some devices folding over so that full ink comes out dimmer than
the strokes' edges), a gain, an illumination ramp, stray defect pixels and the sheet's other side showing
through, then pixel noise and clipping to [0, 1]. The ten training clients each used one device; the
validation and test images come from ten other devices, none of which scanned a training shard. Several of
these effects cannot be undone image by image (a folded response maps two inks to one level; clipping loses
what is above 1), so the oracle does not invert them: it replays the generator (`generate()`), knows every
scored image's own effects and renders every training digit (the shards pooled on one machine: no rounds,
no message limit, the federated literature's centralised bound, McMahan et al. 2017) through exactly those
effects (`observe`, then clipping; no noise), and classifies the image by its nearest rendered digits or by
a Gaussian kernel density over them (analysis by synthesis). It picks the best on validation accuracy and
scores it once on the hidden test set with the task's own evaluator. What it cannot see through (the
noise, the clipping, two inks folded onto one level) is the data's limit. About 20 CPU-seconds.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd

from oracle_common import BestOnVal, evaluate, prepared

NEIGHBOURS = (1, 3)  # k of the k-nearest rendered digits (majority vote, the nearest breaking ties)
BANDWIDTHS = (0.1, 0.2, 0.3, 0.5)  # sd of the Gaussian kernel density over the rendered digits, per pixel


def generator(task):
    spec = importlib.util.spec_from_file_location("fl_prepare", task.spec.task_dir / "prepare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def distances(gen, x: np.ndarray, effects: dict, clean: np.ndarray) -> np.ndarray:
    """(n, m) squared distances from each scored image to every clean training digit rendered through
    that image's own effects (noise-free, clipped to [0, 1] as the generator clips)."""
    out = np.zeros((len(x), len(clean)))
    for i in range(len(x)):
        own = {name: np.repeat(values[i:i + 1], len(clean), axis=0) for name, values in effects.items()}
        out[i] = ((np.clip(gen.observe(clean, own), 0.0, 1.0) - x[i]) ** 2).sum(1)
    return out


def k_nearest(d2: np.ndarray, y_train: np.ndarray, k: int) -> np.ndarray:
    order = np.argsort(d2, axis=1)[:, :k]
    votes = np.zeros((len(d2), 10))
    for rank in range(k):
        np.add.at(votes, (np.arange(len(d2)), y_train[order[:, rank]]), 1.0 + 1e-3 * (k - rank))
    return votes.argmax(1)


def kernel_density(d2: np.ndarray, y_train: np.ndarray, bandwidth: float) -> np.ndarray:
    logits = -d2 / (2 * bandwidth ** 2)
    scores = np.full((len(d2), 10), -np.inf)
    for c in range(10):
        a = logits[:, y_train == c]
        top = a.max(1)
        scores[:, c] = top + np.log(np.exp(a - top[:, None]).sum(1))
    return scores.argmax(1)


def main() -> int:
    task = prepared("federated_learning")
    gen = generator(task)
    data = gen.generate()  # prepare.py's draws, replayed
    x, y, effects = data["x"], data["y"], data["effects"]
    for client, rows in enumerate(data["shards"]):
        with np.load(task.public_dir / f"client{client}.npz") as shard:
            assert np.array_equal(shard["x"], x[rows]) and np.array_equal(shard["y"], y[rows]), \
                "the replayed generator disagrees with the prepared shards"
    train = np.concatenate(data["shards"])
    clean, _ = gen.load_digits()
    by_id = {int(i): row for row, i in enumerate(data["ids"])}
    inputs = {"val": np.load(task.public_dir / "val_inputs.npz"),
              "test": np.load(task.test_inputs_dir / "test_inputs.npz")}
    rows = {phase: np.array([by_id[int(i)] for i in d["id"]]) for phase, d in inputs.items()}
    d2 = {}
    for phase, d in inputs.items():
        assert np.array_equal(d["x"], x[rows[phase]]), f"the replayed generator disagrees with the {phase} inputs"
        own = {name: values[rows[phase]] for name, values in effects.items()}
        d2[phase] = distances(gen, x[rows[phase]], own, clean[train])
    rules = {f"{k}-nearest rendered digits": (lambda m, k=k: k_nearest(m, y[train], k)) for k in NEIGHBOURS}
    rules.update({f"kernel density, bandwidth {b:g}": (lambda m, b=b: kernel_density(m, y[train], b))
                  for b in BANDWIDTHS})
    picker = BestOnVal(task)
    for name, rule in rules.items():
        scores = {}
        for phase, d in inputs.items():
            frame = pd.DataFrame({"id": d["id"], "label": rule(d2[phase]).astype(np.int64)})
            scores[phase] = evaluate(task, phase, lambda out, f=frame: f.to_csv(out / "predictions.csv", index=False))
        picker.add(name, scores)
    picker.conclude()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
