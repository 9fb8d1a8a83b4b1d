"""semi_supervised's 1.0: classifiers trained on EVERY label of the training pool, the generator's nuisances known.

    python benchmarks/oracle_semi_supervised.py

Agents see 10 of the pool's 1078 labels; semi-supervised learning from them cannot beat what all 1078 give.
Version 5's images are sklearn's 8x8 digits drawn through prepare.py's `render`: hidden per-image nuisances
(an affine warp and a random position on a 12x12 canvas, thinned or thickened strokes, fragments of other
digits as clutter, a gain, a background level, inverted polarity, pixel noise). The oracle knows the
generator and each image's draw, which it replays from prepare.py's fixed seeds (the labels from its
seeded split and id draw). Candidates, each an RBF SVM (C 10) trained on all 1078 pool images and labels:

  - on the pixels as given (what every label gives with nothing known);
  - the same plus AUGMENT fresh generator draws of each pool digit (the generator's form known);
  - on each image's digit layer (clutter and photometry undone: the draw known), re-centred on its centre
    of mass, plus AUGMENT fresh draws' digit layers;
  - on each image's source digit (every nuisance undone, geometry included: the whole draw known).

The one with the best validation accuracy is the oracle, scored once on the hidden test set by the task's
own evaluator. About a minute of CPU on one core.
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

AUGMENT = 8  # extra generator draws of each pool digit
AUGMENT_SEED = 1  # not prepare.py's seed: fresh draws of the nuisances


def prepare_module(task):
    spec = importlib.util.spec_from_file_location("semi_supervised_prepare", task.spec.task_dir / "prepare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recentre(x: np.ndarray) -> np.ndarray:
    """Each flattened square image shifted (bilinear) so its centre of mass sits at the canvas centre."""
    from scipy import ndimage

    side = int(round(np.sqrt(x.shape[1])))
    middle = (side - 1) / 2
    out = np.empty_like(x)
    for i, image in enumerate(x.reshape(-1, side, side)):
        row, col = ndimage.center_of_mass(image) if image.sum() > 0 else (middle, middle)
        out[i] = ndimage.shift(image, (middle - row, middle - col), order=1, mode="constant").ravel()
    return out


def main() -> int:
    from sklearn.svm import SVC

    from researchbench.task_runtime.datasets import stratified_split
    from researchbench.task_runtime.digits import PIXEL_MAX, digit_pixels

    task = prepared("semi_supervised")
    prep = prepare_module(task)
    images, labels = digit_pixels()
    # replay prepare.py: the split, the id draw, and every image's draw (written pixels, digit layer)
    rng = np.random.default_rng(prep.SEED)
    stratified_split(labels, prep.FRACTIONS, rng, names=("pool", "val", "test"), shuffle=False)
    ids = rng.permutation(len(labels))
    pixels, layers, _ = prep.render(images, np.random.default_rng(prep.RENDER_SEED))
    row_of = {int(i): r for r, i in enumerate(ids)}

    labeled = pd.read_csv(task.public_dir / "train_labeled.csv")
    pool_ids = np.concatenate([labeled["id"], pd.read_csv(task.public_dir / "train_unlabeled.csv")["id"]])
    pool = np.array([row_of[int(i)] for i in pool_ids])
    written = pd.concat([labeled.drop(columns="label"), pd.read_csv(task.public_dir / "train_unlabeled.csv")])
    assert (written[prep.PIXELS].to_numpy() == pixels[pool]).all(), "the replay disagrees with the written pixels"
    assert (labels[[row_of[int(i)] for i in labeled["id"]]] == labeled["label"].to_numpy()).all()
    y = labels[pool]
    redrawn_pixels, redrawn_layers, _ = prep.render(np.tile(images[pool], (AUGMENT, 1)),
                                                    np.random.default_rng(AUGMENT_SEED))
    y_aug = np.tile(y, AUGMENT + 1)
    inputs = {phase: pd.read_csv(path)["id"].to_numpy() for phase, path in
              (("val", task.public_dir / "val_inputs.csv"), ("test", task.test_inputs_dir / "test_inputs.csv"))}
    print(f"semi_supervised: {len(y)} labeled pool images (agents see 10 of these labels), "
          f"{len(redrawn_pixels)} generator redraws", flush=True)

    observed = pixels / PIXEL_MAX
    source = images / PIXEL_MAX
    candidates = {  # name: (x to fit, y to fit, features of the rows given)
        "RBF SVM C=10, pixels as given": (observed[pool], y, lambda rows: observed[rows]),
        f"RBF SVM C=10, pixels as given, pool + {AUGMENT} generator redraws each": (
            np.concatenate([observed[pool], redrawn_pixels / PIXEL_MAX]), y_aug, lambda rows: observed[rows]),
        f"RBF SVM C=10, digit layers (clutter and photometry undone), re-centred, pool + {AUGMENT} redraws each": (
            recentre(np.concatenate([layers[pool], redrawn_layers])), y_aug, lambda rows: recentre(layers[rows])),
        "RBF SVM C=10, source digits (every nuisance undone)": (source[pool], y, lambda rows: source[rows]),
    }
    picker = BestOnVal(task)
    for name, (x_fit, y_fit, features) in candidates.items():
        model = SVC(C=10.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(x_fit, y_fit)
        scores = {}
        for phase, phase_ids in inputs.items():
            pred = model.predict(features(np.array([row_of[int(i)] for i in phase_ids]))).astype(np.int64)
            scores[phase] = evaluate(task, phase, lambda out, i=phase_ids, p=pred: pd.DataFrame(
                {"id": i, "label": p}).to_csv(out / "predictions.csv", index=False))
        picker.add(name, scores)
    picker.conclude()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
