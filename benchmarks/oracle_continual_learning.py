"""continual_learning's 1.0: joint training on every split with each image's hidden condition known.

    python benchmarks/oracle_continual_learning.py

The continual-learning literature bounds a class-incremental learner by joint (offline, i.i.d.) training on
every split's data at once (van de Ven et al. 2022, "Three types of incremental learning": "Joint"). Since
version 3.0.0 that bound is not enough: every split is recorded under its own hidden condition (canvas
position, polarity, stroke gain and contrast, a background grating; ml_tasks/continual_learning/prepare.py)
and every validation and test image under a split's condition drawn independently of its class, so joint
training on the pixels as given ties each class to its split's look and fails on the rest. The oracle
replays the generator (`prepare.generate()`) and knows what no learner is told: each image's condition and
offset, and the training images' source digits. After split k it is trained, without the driver's protocol
or state budget, on splits 0..k together; only the model after the last split enters `average_accuracy`.
Candidates:

  - joint training on the pixels as given (version 2's 1.0: RBF SVMs, 3-nearest neighbours);
  - canonical images: each image's condition undone (polarity, the background unscreened, the 8x8 digit cut
    out at its true offset, the stroke gain divided out; with and without the contrast exponent inverted),
    an RBF SVM trained on the canonical training images;
  - per-condition generator redraws: for each of the five conditions, every training digit of splits 0..k
    rendered again under that condition (fresh jitter and noise), made canonical the same way, and an RBF
    SVM fitted on them; a val or test image is made canonical under its own condition and classified by
    that condition's SVM (what the image's noise and contrast leave readable is what it is trained on).

The one with the best validation `average_accuracy` is the oracle, scored once on the hidden test set by the
task's own evaluator. About a CPU-minute.
"""

from __future__ import annotations

import importlib.util
import os
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from oracle_common import BestOnVal, evaluate, prepared  # noqa: E402

N_SPLITS = 5
REDRAW_SEED = 1  # not prepare.py's seeds: fresh jitter and noise for the redraws


def generator(task):
    spec = importlib.util.spec_from_file_location("cl_prepare", task.spec.task_dir / "prepare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def canonical(gen, x: np.ndarray, cond: dict, where: np.ndarray, contrast: bool = False) -> np.ndarray:
    """Rows of x rendered under `cond` at offsets `where`, the condition undone: (n, 64) stroke images."""
    side = gen.CANVAS
    image = x.reshape(len(x), side, side).astype(np.float64)
    if cond["inverted"]:
        image = 1.0 - image
    ink = 1.0 - (1.0 - image) / (1.0 - gen.background(cond))  # the background unscreened
    out = np.stack([ink[i, dy:dy + 8, dx:dx + 8] for i, (dy, dx) in enumerate(where)]) / cond["gain"]
    if contrast:
        out = np.clip(out, 0.0, 1.0) ** (1.0 / cond["gamma"])
    return out.reshape(len(x), 64)


def writer(ids: np.ndarray, preds: list[np.ndarray]):
    def write(out):
        pd.DataFrame({"after_split": np.repeat(np.arange(len(preds)), len(ids)), "id": np.tile(ids, len(preds)),
                      "label": np.concatenate(preds)}).to_csv(out / "predictions.csv", index=False)
    return write


def main() -> int:
    from sklearn.base import clone
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import SVC

    task = prepared("continual_learning")
    gen = generator(task)
    data = gen.generate()  # prepare.py's draws, replayed
    x, y, ids, parts = data["x"], data["y"], data["ids"], data["parts"]
    conditions, condition, offsets = data["conditions"], data["condition"], data["offsets"]
    source, _ = gen.load_digits()
    train = parts["train"]
    for k in range(N_SPLITS):
        with np.load(task.public_dir / f"train_split{k}.npz") as split:
            rows = train[y[train] // 2 == k]
            assert np.array_equal(split["x"], x[rows]) and np.array_equal(split["y"], y[rows]), \
                "the replayed generator disagrees with the prepared data"
    phases = {}
    for phase, path in (("val", task.public_dir / "val_inputs.npz"), ("test", task.test_inputs_dir / "test_inputs.npz")):
        with np.load(path) as inputs:
            order = np.argsort(ids[parts[phase]], kind="stable")
            rows = parts[phase][order]
            assert np.array_equal(inputs["id"], ids[rows]) and np.array_equal(inputs["x"], x[rows])
            phases[phase] = rows

    def canonical_rows(rows: np.ndarray, contrast: bool) -> np.ndarray:
        out = np.zeros((len(rows), 64))
        for j, cond in enumerate(conditions):
            mask = condition[rows] == j
            if mask.any():
                out[mask] = canonical(gen, x[rows[mask]], cond, offsets[rows[mask]], contrast)
        return out

    def joint(model, features) -> dict[str, list[np.ndarray]]:
        """After each split k: `model` fitted on features of splits 0..k's training rows, predicting every phase."""
        preds = {phase: [] for phase in phases}
        for k in range(N_SPLITS):
            seen = train[y[train] // 2 <= k]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fitted = clone(model).fit(features(seen), y[seen])
            for phase, rows in phases.items():
                preds[phase].append(fitted.predict(features(rows)).astype(np.int64))
        return preds

    def redrawn(c: float) -> dict[str, list[np.ndarray]]:
        """Per-condition SVMs on every seen training digit re-rendered under that condition."""
        rng = np.random.default_rng(REDRAW_SEED)
        preds = {phase: [] for phase in phases}
        for k in range(N_SPLITS):
            seen = train[y[train] // 2 <= k]
            labels = {phase: np.zeros(len(rows), dtype=np.int64) for phase, rows in phases.items()}
            for j, cond in enumerate(conditions):
                pixels, where = gen.render(source[seen], cond, rng)
                svm = SVC(C=c).fit(canonical(gen, pixels, cond, where), y[seen])
                for phase, rows in phases.items():
                    mask = condition[rows] == j
                    if mask.any():
                        labels[phase][mask] = svm.predict(canonical(gen, x[rows[mask]], cond, offsets[rows[mask]]))
            for phase in phases:
                preds[phase].append(labels[phase])
        return preds

    candidates = {}
    for c in (3.0, 10.0):
        candidates[f"joint RBF SVM C={c:g}, pixels as given"] = lambda c=c: joint(SVC(C=c), lambda r: x[r])
    candidates["joint 3-nearest neighbours, pixels as given"] = lambda: joint(KNeighborsClassifier(3), lambda r: x[r])
    for c in (3.0, 10.0):
        for contrast in (False, True):
            name = f"joint RBF SVM C={c:g}, canonical images{', contrast inverted' if contrast else ''}"
            candidates[name] = lambda c=c, contrast=contrast: joint(SVC(C=c), lambda r: canonical_rows(r, contrast))
    for c in (3.0, 10.0):
        candidates[f"per-condition RBF SVMs C={c:g} on generator redraws, canonical"] = lambda c=c: redrawn(c)

    picker = BestOnVal(task)
    for name, run in candidates.items():
        preds = run()
        scores = {phase: evaluate(task, phase, writer(ids[rows], preds[phase])) for phase, rows in phases.items()}
        picker.add(name, scores)
    picker.conclude()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
