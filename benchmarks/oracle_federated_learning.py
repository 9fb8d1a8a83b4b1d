"""federated_learning's 1.0: centralised training on the pooled shards with every scanner undone.

    python benchmarks/oracle_federated_learning.py

The generator (ml_tasks/federated_learning/prepare.py, version 4.0.0) is known: each client's hidden
scanner pastes the 8x8 digit at an offset of its own on the 9x9 canvas, thickens its strokes to the
right, downwards or not at all, multiplies it by a gain, adds a background of its own and noise; every
validation and test image went through one of the ten scanners, drawn independently of its digit. The
oracle replays the generator (`generate()`) and knows what no estimator is told: which scanner drew
each image (training, validation and test) and that scanner's offset, stroke, gain and background. It
maps every image to one canonical form (the background subtracted, the gain divided out, the strokes
thickened to the right and downwards, which every scanner's stroke leads to, the digit moved to the
canvas's top-left corner), pools the ten shards on one machine (no rounds, no message limit: the
federated literature's centralised bound, McMahan et al. 2017), trains k-nearest neighbours and RBF
support vector machines on the canonical training images, alone or with every training digit redrawn
through all ten scanners (fresh noise) and made canonical too (the scored images' distribution), picks
the best on validation accuracy and scores it once on the hidden test set with the task's own evaluator. What it cannot undo (the noise,
the clipping at 0 and 1) is the data's limit. Under half a CPU-minute.
"""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pandas as pd

from oracle_common import BestOnVal, evaluate, prepared

N_CLIENTS = 10
REDRAW_SEED = 7  # the oracle's own redraws of the training digits through every scanner


def generator(task):
    spec = importlib.util.spec_from_file_location("fl_prepare", task.spec.task_dir / "prepare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def canonical(x: np.ndarray, owner: np.ndarray, gen, scanners: list[dict]) -> np.ndarray:
    """Each rendered image with its own scanner undone as far as it can be: (n, 81)."""
    size = gen.CANVAS
    out = np.zeros((len(x), size, size))
    for client, scanner in enumerate(scanners):
        rows = np.flatnonzero(owner == client)
        z = ((x[rows] - scanner["background"]) / scanner["gain"]).reshape(-1, size, size)
        z = gen.thicken(z, 3 & ~scanner["stroke"])  # the stroke the scanner did not apply: every image ends up 3
        dy, dx = scanner["offset"]
        out[rows, :size - dy, :size - dx] = z[:, dy:, dx:]
    return out.reshape(len(x), -1)


def redraws(gen, data: dict, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every training digit rendered again through each of the ten scanners (fresh noise, REDRAW_SEED) and
    made canonical: the scored images' own distribution, which the shards (each digit through its client's
    scanner only) do not cover."""
    images, y = gen.load_digits()
    rng = np.random.default_rng(REDRAW_SEED)
    xs, owners = [], []
    for client, scanner in enumerate(data["scanners"]):
        xs.append(gen.render(images[train], scanner, rng))
        owners.append(np.full(len(train), client))
    owner = np.concatenate(owners)
    return canonical(np.concatenate(xs), owner, gen, data["scanners"]), np.tile(y[train], N_CLIENTS)


def candidates() -> dict[str, tuple[object, bool]]:
    """name -> (model, trained on the redraws too)."""
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import SVC

    out: dict[str, tuple[object, bool]] = {}
    for redraw in (False, True):
        tag = ", shards + redraws" if redraw else ", shards"
        out[f"3-nearest neighbours{tag}"] = (KNeighborsClassifier(3), redraw)
        for c in (3.0, 10.0, 30.0):
            for gamma in ("scale", 0.05):
                out[f"RBF SVM C={c:g} gamma={gamma}{tag}"] = (SVC(C=c, gamma=gamma), redraw)
    return out


def main() -> int:
    task = prepared("federated_learning")
    gen = generator(task)
    data = gen.generate()  # prepare.py's draws, replayed
    x, y, owner, scanners = data["x"], data["y"], data["scanner"], data["scanners"]
    for client, rows in enumerate(data["shards"]):
        with np.load(task.public_dir / f"client{client}.npz") as shard:
            assert np.array_equal(shard["x"], x[rows]) and np.array_equal(shard["y"], y[rows]), \
                "the replayed generator disagrees with the prepared shards"
    train = np.concatenate(data["shards"])
    z = canonical(x, owner, gen, scanners)
    by_id = {int(i): row for row, i in enumerate(data["ids"])}
    inputs = {"val": np.load(task.public_dir / "val_inputs.npz"),
              "test": np.load(task.test_inputs_dir / "test_inputs.npz")}
    rows = {phase: np.array([by_id[int(i)] for i in d["id"]]) for phase, d in inputs.items()}
    for phase, d in inputs.items():
        assert np.array_equal(d["x"], x[rows[phase]]), f"the replayed generator disagrees with the {phase} inputs"
    z_more, y_more = redraws(gen, data, train)
    picker = BestOnVal(task)
    for name, (model, redraw) in candidates().items():
        fit_x = np.concatenate([z[train], z_more]) if redraw else z[train]
        fit_y = np.concatenate([y[train], y_more]) if redraw else y[train]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(fit_x, fit_y)
        scores = {}
        for phase, d in inputs.items():
            frame = pd.DataFrame({"id": d["id"], "label": model.predict(z[rows[phase]]).astype(np.int64)})
            scores[phase] = evaluate(task, phase, lambda out, f=frame: f.to_csv(out / "predictions.csv", index=False))
        picker.add(name, scores)
    picker.conclude()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
