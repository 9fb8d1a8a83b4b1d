"""continual_learning's 1.0: joint training, the non-continual upper bound of class-incremental learning.

    python benchmarks/oracle_continual_learning.py

The continual-learning literature bounds a class-incremental learner by joint (offline, i.i.d.)
training on every split's data at once (van de Ven et al. 2022, "Three types of incremental
learning": "Joint"). Here the joint learner after split k is trained on splits 0..k together,
without the driver's protocol (no one-split-per-call, no state budget), and predicts every scored
input; only the model after the last split enters `average_accuracy`. Candidates: the reference's
64-64-10 MLP trained jointly, k-nearest neighbours and RBF support vector machines (the strongest
classifier family on these 8x8 digits); the one with the best validation `average_accuracy` is the
oracle, scored once on the hidden test set by the task's own evaluator. About a CPU-minute.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from oracle_common import BestOnVal, digit_classifiers, evaluate, prepared

N_SPLITS = 5


def candidates() -> dict[str, object]:
    return digit_classifiers("joint MLP 64-64-10 (the reference's network)")


def joint_predictions(model, task, x_eval: np.ndarray) -> list[np.ndarray]:
    """The model trained on splits 0..k, for each k, predicting x_eval."""
    from sklearn.base import clone

    xs, ys, preds = [], [], []
    for k in range(N_SPLITS):
        split = np.load(task.public_dir / f"train_split{k}.npz")
        xs.append(split["x"])
        ys.append(split["y"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = clone(model).fit(np.concatenate(xs), np.concatenate(ys))
        preds.append(fitted.predict(x_eval).astype(np.int64))
    return preds


def writer(ids: np.ndarray, preds: list[np.ndarray]):
    def write(out):
        pd.DataFrame({"after_split": np.repeat(np.arange(len(preds)), len(ids)), "id": np.tile(ids, len(preds)),
                      "label": np.concatenate(preds)}).to_csv(out / "predictions.csv", index=False)
    return write


def main() -> int:
    task = prepared("continual_learning")
    inputs = {"val": np.load(task.public_dir / "val_inputs.npz"),
              "test": np.load(task.test_inputs_dir / "test_inputs.npz")}
    picker = BestOnVal(task)
    for name, model in candidates().items():
        scores = {phase: evaluate(task, phase, writer(d["id"], joint_predictions(model, task, d["x"])))
                  for phase, d in inputs.items()}
        picker.add(name, scores)
    picker.conclude()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
