"""Write the unlearning task's data: a digits classifier trained on data that includes a forget set.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/unlearning>

sklearn's digits (/16), each pasted at a random offset (0..2 in each direction) on a blank 10x10
canvas with Gaussian pixel noise (sd 0.1): harder to generalise on than plain digits, so a model
that fits its training images recognisably remembers them, as real models do. Split per class: 60% training, 20% validation, 20% test. A random 20% of the
training images is the forget set. The original model is scikit-learn's MLPClassifier (64-128-10,
ReLU, Adam, fixed random_state) trained on all training images, forget set included; it fits them
perfectly, so they are recognisable members. Agent code gets the model, the forget set and a random
quarter of the retained images; the other retained images, the validation and test images and
every label beyond those are for the evaluator only. Deterministic (fixed seeds, single-threaded
numpy, uncompressed .npz with fixed timestamps). Layout under --out:

    public/original_model.npz   w1 (100, 128), b1 (128,), w2 (128, 10), b2 (10,) float32
    public/forget.npz           x (n, 100) float32, y (n,) int64       the images to forget
    public/retain_subset.npz    x, y                                    the retained images agent code may use
    test_inputs/README.txt      the test phase needs no inputs (the model is scored on hidden images)
    labels/eval_val.npz, labels/eval_test.npz
        forget_x, forget_y        the forget set (members whose membership should be undetectable)
        heldout_x, heldout_y      validation / test images (never trained on: non-members)
        retain_x, retain_y        half each of the hidden retained images (members to keep)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one BLAS thread: the same sums in the same order, so the same model bytes

import numpy as np  # noqa: E402

from task_runtime.datasets import prepare_main, stratified_split  # noqa: E402
from task_runtime.digits import digit_images, on_canvas  # noqa: E402

SEED = 20261127
FORGET_FRACTION = 0.2
RETAIN_PUBLIC_FRACTION = 0.25
HIDDEN = 128
CANVAS = 10
NOISE = 0.1
FRACTIONS = (0.6, 0.2, 0.2)  # train / val / test, per class


def split(y: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    out = stratified_split(y, FRACTIONS, rng)
    train = out.pop("train")
    n_forget = round(FORGET_FRACTION * len(train))
    out["forget"], retain = train[:n_forget], train[n_forget:]
    n_public = round(RETAIN_PUBLIC_FRACTION * len(retain))
    out["retain_public"], hidden = retain[:n_public], retain[n_public:]
    out["retain_val"], out["retain_test"] = hidden[: len(hidden) // 2], hidden[len(hidden) // 2:]
    return out


def train_original(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    from sklearn.neural_network import MLPClassifier

    model = MLPClassifier(hidden_layer_sizes=(HIDDEN,), alpha=1e-4, max_iter=300, random_state=SEED % 2**31,
                          tol=1e-6, n_iter_no_change=300).fit(x.astype(np.float64), y)
    (w1, w2), (b1, b2) = model.coefs_, model.intercepts_
    return {k: v.astype(np.float32) for k, v in {"w1": w1, "b1": b1, "w2": w2, "b2": b2}.items()}


def build(out: Path) -> None:
    import warnings

    images, y = digit_images()
    rng = np.random.default_rng(SEED)
    x = on_canvas(images, CANVAS, NOISE, rng)
    parts = split(y, rng)
    for folder in ("public", "test_inputs", "labels"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    train = np.concatenate([parts["forget"], parts["retain_public"], parts["retain_val"], parts["retain_test"]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter reached: intended, the model is meant to fit its data
        np.savez(out / "public" / "original_model.npz", **train_original(x[train], y[train]))
    np.savez(out / "public" / "forget.npz", x=x[parts["forget"]], y=y[parts["forget"]])
    np.savez(out / "public" / "retain_subset.npz", x=x[parts["retain_public"]], y=y[parts["retain_public"]])
    (out / "test_inputs" / "README.txt").write_text(
        "The unlearning task's test phase needs no inputs: the unlearned model is scored on hidden images.\n")
    for phase in ("val", "test"):
        f, h, r = parts["forget"], parts[phase], parts[f"retain_{phase}"]
        np.savez(out / "labels" / f"eval_{phase}.npz", forget_x=x[f], forget_y=y[f], heldout_x=x[h],
                 heldout_y=y[h], retain_x=x[r], retain_y=y[r])


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
