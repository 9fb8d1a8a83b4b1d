"""continual_learning's 1.0: joint training on every split with each image's hidden condition known.

    python benchmarks/oracle_continual_learning.py

The continual-learning literature bounds a class-incremental learner by joint (offline, i.i.d.) training on
every split's data at once (van de Ven et al. 2022, "Three types of incremental learning": "Joint"). Since
version 3.0.0 that bound is not enough: every split is recorded under its own hidden style (since 4.0.0 a
distribution from which each image draws its own condition: rotation, size, aspect, shear and place of the
digit, stroke thickness, noise, and one of two looks of polarity, stroke gain and contrast and background
grating; ml_tasks/continual_learning/prepare.py) and every validation and test image under the style of a
split drawn independently of its class, so joint training on the pixels as given ties each class to its
split's look and fails on the rest. The oracle replays the generator (`prepare.generate()`) and knows what
no learner is told: every image's own condition, the five styles, and the training images' source digits.
After split k it is trained, without the driver's protocol or state budget, on splits 0..k together; only
the model after the last split enters `average_accuracy`. Candidates:

  - joint training on the pixels as given (version 2's 1.0: RBF SVMs);
  - canonical images: each image's condition undone (polarity, the background unscreened, the stroke gain
    divided out, optionally the contrast exponent inverted, then the canvas sampled back at the 8x8 digit's
    pixel centres through the image's affine map), an RBF SVM on the canonical training images;
  - canonical images plus generator redraws: every seen training digit also rendered REDRAWS more times under
    conditions drawn from the five styles (the distribution the val and test images come from), made
    canonical the same way, and an RBF SVM fitted on all of them (what the noise, thickness and contrast of
    other styles leave readable is what it is trained on).

The one with the best validation `average_accuracy` is the oracle, scored once on the hidden test set by the
task's own evaluator. A few CPU-minutes.
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
REDRAW_SEED = 1  # not prepare.py's seeds: fresh conditions and noise for the redraws
REDRAWS = 4


def generator(task):
    spec = importlib.util.spec_from_file_location("cl_prepare", task.spec.task_dir / "prepare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def canonical(gen, x: np.ndarray, cond: dict, contrast: bool = False) -> np.ndarray:
    """Rows of x rendered under their conditions `cond` (dict of (n,) arrays), each undone: (n, 64) strokes."""
    side = gen.CANVAS
    image = x.reshape(len(x), side, side).astype(np.float64)
    image = np.where(cond["inverted"][:, None, None] > 0.5, 1.0 - image, image)
    ink = (1.0 - (1.0 - image) / (1.0 - gen.backgrounds(cond))) / cond["gain"][:, None, None]  # unscreened
    if contrast:
        ink = np.clip(ink, 0.0, 1.0) ** (1.0 / cond["gamma"][:, None, None])
    rr, cc = np.mgrid[0:8, 0:8].reshape(2, -1).astype(np.float64) - 3.5
    a = gen.affine(cond)
    centre = (side - 1) / 2
    rows = a[:, 0, 0, None] * rr + a[:, 0, 1, None] * cc + centre + cond["centre_y"][:, None]
    cols = a[:, 1, 0, None] * rr + a[:, 1, 1, None] * cc + centre + cond["centre_x"][:, None]
    return gen.bilinear(ink, rows, cols)


def writer(ids: np.ndarray, preds: list[np.ndarray]):
    def write(out):
        pd.DataFrame({"after_split": np.repeat(np.arange(len(preds)), len(ids)), "id": np.tile(ids, len(preds)),
                      "label": np.concatenate(preds)}).to_csv(out / "predictions.csv", index=False)
    return write


def main() -> int:
    from sklearn.svm import SVC

    task = prepared("continual_learning")
    gen = generator(task)
    data = gen.generate()  # prepare.py's draws, replayed
    x, y, ids, parts = data["x"], data["y"], data["ids"], data["parts"]
    styles, conditions = data["styles"], data["conditions"]
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

    def of(rows: np.ndarray) -> dict:
        return {key: value[rows] for key, value in conditions.items()}

    # every training digit redrawn REDRAWS times under conditions from a style drawn uniformly, as val/test are
    rng = np.random.default_rng(REDRAW_SEED)
    redraw_rows = np.repeat(train, REDRAWS)
    redraw_style = rng.integers(0, N_SPLITS, size=len(redraw_rows))
    redraw_cond = {key: np.zeros(len(redraw_rows)) for key in gen.CONDITION_KEYS}
    redraw_x = np.zeros((len(redraw_rows), gen.CANVAS ** 2))
    for j, style in enumerate(styles):
        mask = redraw_style == j
        cond = gen.draw_conditions(style, int(mask.sum()), rng)
        redraw_x[mask] = gen.render(source[redraw_rows[mask]], cond, rng)
        for key in gen.CONDITION_KEYS:
            redraw_cond[key][mask] = cond[key]

    def run(c: float, features, redraws: bool) -> dict[str, list[np.ndarray]]:
        """After each split k: an RBF SVM fitted on splits 0..k's training rows (and their redraws)."""
        eval_features = {phase: features(x[rows], of(rows)) for phase, rows in phases.items()}
        train_features = features(x[train], of(train))
        extra = features(redraw_x, redraw_cond) if redraws else None
        preds = {phase: [] for phase in phases}
        for k in range(N_SPLITS):
            seen = y[train] // 2 <= k
            fx, fy = train_features[seen], y[train][seen]
            if redraws:
                more = y[redraw_rows] // 2 <= k
                fx, fy = np.vstack([fx, extra[more]]), np.concatenate([fy, y[redraw_rows][more]])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fitted = SVC(C=c).fit(fx, fy)
            for phase in phases:
                preds[phase].append(fitted.predict(eval_features[phase]).astype(np.int64))
        return preds

    candidates = {}
    for c in (3.0, 10.0):
        candidates[f"joint RBF SVM C={c:g}, pixels as given"] = lambda c=c: run(c, lambda v, cond: v, False)
    for contrast in (False, True):
        tag = ", contrast inverted" if contrast else ""
        for c in (3.0, 10.0):
            candidates[f"joint RBF SVM C={c:g}, canonical images{tag}"] = \
                lambda c=c, contrast=contrast: run(c, lambda v, cond: canonical(gen, v, cond, contrast), False)
            candidates[f"joint RBF SVM C={c:g}, canonical images{tag} + {REDRAWS} generator redraws"] = \
                lambda c=c, contrast=contrast: run(c, lambda v, cond: canonical(gen, v, cond, contrast), True)

    picker = BestOnVal(task)
    for name, make in candidates.items():
        preds = make()
        scores = {phase: evaluate(task, phase, writer(ids[rows], preds[phase])) for phase, rows in phases.items()}
        picker.add(name, scores)
    picker.conclude()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
