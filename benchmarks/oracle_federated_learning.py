"""federated_learning's 1.0: centralised training on the pooled shards with every image's device effects undone.

    python benchmarks/oracle_federated_learning.py

The generator (ml_tasks/federated_learning/prepare.py, version 5.0.0) is known: every device is a hidden
distribution of per-image effects, and each image got its own draw from its device's distribution: where
the 8x8 digit sits on the 9x9 canvas, how its strokes are thickened, a contrast power (gamma), a gain, an
illumination ramp and stray defect pixels, then pixel noise and clipping to [0, 1]. The ten training
clients each used one device; the validation and test images come from ten other devices, none of which
scanned a training shard. The oracle replays the generator (`generate()`) and knows what no estimator is
told: every image's own effects (training, validation and test). It maps every image to one canonical
form (the ramp and the stray light subtracted, the gain divided out, the contrast power inverted or left
alone (two candidates), the strokes thickened to the right and downwards, which every stroke leads to, the
digit moved to the canvas's top-left corner), pools the ten shards on one machine (no rounds, no message
limit: the federated literature's centralised bound, McMahan et al. 2017), trains k-nearest neighbours
and RBF support vector machines on the canonical training images, alone or with every training digit
redrawn through each of the ten scoring devices (fresh effects and noise) and made canonical too (the
scored images' distribution), picks the best on validation accuracy and scores it once on the hidden
test set with the task's own evaluator. What it cannot undo (the noise, the clipping at 0 and 1) is the
data's limit. About a CPU-minute.
"""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pandas as pd

from oracle_common import BestOnVal, evaluate, prepared

REDRAW_SEED = 7  # the oracle's own redraws of the training digits through every scoring device


def generator(task):
    spec = importlib.util.spec_from_file_location("fl_prepare", task.spec.task_dir / "prepare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def canonical(x: np.ndarray, effects: dict, gen, invert_gamma: bool) -> np.ndarray:
    """Each rendered image with its own effects undone as far as they can be: (n, 81)."""
    size = gen.CANVAS
    z = np.clip((x - effects["light"]) / effects["gain"][:, None], 0.0, 1.0)
    if invert_gamma:
        z = z ** (1.0 / effects["gamma"][:, None])
    z = gen.thicken(z.reshape(-1, size, size), 3 & ~effects["stroke"])  # every image ends up thickened both ways
    out = np.zeros_like(z)
    for i, (dy, dx) in enumerate(np.asarray(gen.OFFSETS)[effects["offset"]]):
        out[i, :size - dy, :size - dx] = z[i, dy:, dx:]
    return out.reshape(len(x), -1)


def redraws(gen, data: dict, train: np.ndarray) -> tuple[np.ndarray, dict, np.ndarray]:
    """Every training digit rendered again through each scoring device (its own fresh effects and noise,
    REDRAW_SEED): the scored images' own distribution, which the shards (each digit through its client's
    device only) do not cover. Returns the images, their effects and their digits."""
    images, y = gen.load_digits()
    rng = np.random.default_rng(REDRAW_SEED)
    xs, effects = [], []
    for scanner in data["scanners"][gen.N_CLIENTS:]:
        drawn = gen.draw_effects(scanner, len(train), rng)
        xs.append(gen.render(images[train], scanner, drawn, rng))
        effects.append(drawn)
    merged = {name: np.concatenate([e[name] for e in effects]) for name in effects[0]}
    return np.concatenate(xs), merged, np.tile(y[train], len(xs))


def candidates() -> dict[str, tuple[object, bool, bool]]:
    """name -> (model, contrast power inverted, trained on the redraws too)."""
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import SVC

    out: dict[str, tuple[object, bool, bool]] = {}
    for invert in (True, False):
        for redraw in (False, True):
            tag = (", gamma inverted" if invert else ", gamma kept") + (", shards + redraws" if redraw else ", shards")
            out[f"3-nearest neighbours{tag}"] = (KNeighborsClassifier(3), invert, redraw)
            for c in (3.0, 10.0, 30.0):
                for gamma in ("scale", 0.05):
                    out[f"RBF SVM C={c:g} gamma={gamma}{tag}"] = (SVC(C=c, gamma=gamma), invert, redraw)
    return out


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
    by_id = {int(i): row for row, i in enumerate(data["ids"])}
    inputs = {"val": np.load(task.public_dir / "val_inputs.npz"),
              "test": np.load(task.test_inputs_dir / "test_inputs.npz")}
    rows = {phase: np.array([by_id[int(i)] for i in d["id"]]) for phase, d in inputs.items()}
    for phase, d in inputs.items():
        assert np.array_equal(d["x"], x[rows[phase]]), f"the replayed generator disagrees with the {phase} inputs"
    x_more, effects_more, y_more = redraws(gen, data, train)
    z = {invert: canonical(x, effects, gen, invert) for invert in (True, False)}
    z_more = {invert: canonical(x_more, effects_more, gen, invert) for invert in (True, False)}
    picker = BestOnVal(task)
    for name, (model, invert, redraw) in candidates().items():
        fit_x = np.concatenate([z[invert][train], z_more[invert]]) if redraw else z[invert][train]
        fit_y = np.concatenate([y[train], y_more]) if redraw else y[train]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(fit_x, fit_y)
        scores = {}
        for phase, d in inputs.items():
            frame = pd.DataFrame({"id": d["id"], "label": model.predict(z[invert][rows[phase]]).astype(np.int64)})
            scores[phase] = evaluate(task, phase, lambda out, f=frame: f.to_csv(out / "predictions.csv", index=False))
        picker.add(name, scores)
    picker.conclude()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
