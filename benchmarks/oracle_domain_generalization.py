"""domain_generalization's 1.0: the generator's own colour-blind image, classified by a model trained on
the true labels.

    python benchmarks/oracle_domain_generalization.py [--scale lite|gpu]

The generator (ml_tasks/domain_generalization/prepare.py) is known: the target is the digit's group
(0-4 or 5-9); the 8x8 digit sits at a random offset on a 10x10 canvas; two spurious features, a colour
(the channel the canvas is drawn in) and a brightness (full or dimmed strokes), follow the observed
label at per-environment rates and flip between the evaluation environments; the 200 columns are the
two channels' 100 values in a fixed, undisclosed order. The score is the worse environment's
accuracy, so the minimax rule ignores both spurious features (any use of them that helps in one
environment hurts in the other) and the best achievable is the best shape classifier. The oracle
replays the generator (`generate()`) and knows what no estimator is told: the column order (it
un-permutes the columns and adds the two channels), each row's offset (it cuts the 8x8 digit back out
of the canvas), its brightness (it undoes the dimming, up to the rounding) and every training image's
true digit (not the observed label, 25% of which is flipped). It trains RBF support vector machines
and k-nearest neighbours on the recovered training images with those labels (predicting the digit,
then its group, or the group directly), picks the best on validation `worst_env_accuracy` and scores
it once on the hidden test set with the task's own evaluator. Under a CPU-minute.

`--scale gpu` measures the domain_generalization_gpu variant's 1.0 on its workspace: the same digits drawn
50 times each into training and 10 times into each evaluation environment (prepare.py's SCALES). Its
training rows are copies of the same 898 digits, so the oracle keeps one recovered image per training
digit (a full-brightness draw where there is one: those are exact), the same 898 images as at lite scale,
and scores the candidates on the larger evaluation sets.
"""

from __future__ import annotations

import argparse
import importlib.util
import warnings

import numpy as np
import pandas as pd

from oracle_common import BestOnVal, evaluate, prepared
from researchbench.task_runtime.digits import PIXEL_MAX


def generator(task):
    spec = importlib.util.spec_from_file_location("dg_prepare", task.spec.task_dir / "prepare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def digit_images(frame: pd.DataFrame, hidden: pd.DataFrame, order: np.ndarray, gen) -> np.ndarray:
    """The 8x8 digit (scaled to [0, 1]) behind each stored row: the columns un-permuted, the channels added,
    the digit cut out at its offset and the dimming undone."""
    hidden = hidden.set_index("id").loc[frame["id"]]
    channelled = np.zeros((len(frame), 2 * gen.PIXELS))
    channelled[:, order] = frame[gen.FEATURES].to_numpy(dtype=float)  # stored column j is channel column order[j]
    canvas = (channelled[:, :gen.PIXELS] + channelled[:, gen.PIXELS:]).reshape(len(frame), gen.CANVAS, gen.CANVAS)
    out = np.stack([canvas[i, dy:dy + 8, dx:dx + 8].ravel() for i, (dy, dx)
                    in enumerate(hidden[["offset_y", "offset_x"]].to_numpy())])
    scale = np.where(hidden["bright"].to_numpy() == 1, 1.0, gen.DIM)
    return out / scale[:, None] / PIXEL_MAX


def candidates() -> dict[str, tuple[object, bool]]:
    """name -> (model, predicts the digit (True) or the group (False))."""
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import SVC

    out: dict[str, tuple[object, bool]] = {"3-nearest neighbours, digit": (KNeighborsClassifier(3), True)}
    for c in (1.0, 3.0, 10.0):
        out[f"RBF SVM C={c:g}, digit"] = (SVC(C=c), True)
        out[f"RBF SVM C={c:g}, group"] = (SVC(C=c), False)
    return out


def one_per_digit(replayed: pd.DataFrame) -> np.ndarray:
    """Positions of one row per source digit, in file order: its first full-brightness draw, else its first.
    At lite scale every digit is drawn once, so this keeps every row."""
    source, bright = replayed["source"].to_numpy(), replayed["bright"].to_numpy()
    ranked = np.lexsort((np.arange(len(source)), -bright, source))  # by digit, full brightness first, file order
    first = np.r_[True, source[ranked][1:] != source[ranked][:-1]]
    return np.sort(ranked[first])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=["lite", "gpu"], default="lite",
                        help="gpu: the domain_generalization_gpu variant's workspace and 1.0")
    args = parser.parse_args(argv)
    task = prepared("domain_generalization" if args.scale == "lite" else "domain_generalization_gpu")
    gen = generator(task)
    tables, order = gen.generate(args.scale)  # prepare.py's draws, replayed
    public = pd.read_csv(task.public_dir / "train.csv")
    replayed = tables["train"].set_index("id").loc[public["id"]]
    assert np.array_equal(replayed[gen.FEATURES].to_numpy(), public[gen.FEATURES].to_numpy()), \
        "the replayed generator disagrees"
    keep = one_per_digit(replayed)
    public, replayed = public.iloc[keep].reset_index(drop=True), replayed.iloc[keep]
    x_train = digit_images(public, tables["train"], order, gen)
    d_train = replayed["digit"].to_numpy()
    print(f"{len(keep)} training digits (one recovered image each) from {len(tables['train'])} training rows", flush=True)
    inputs = {"val": pd.read_csv(task.public_dir / "val_inputs.csv"),
              "test": pd.read_csv(task.test_inputs_dir / "test_inputs.csv")}
    picker = BestOnVal(task)
    for name, (model, by_digit) in candidates().items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(x_train, d_train if by_digit else (d_train >= 5).astype(int))
        scores = {}
        for phase, frame in inputs.items():
            pred = model.predict(digit_images(frame, tables[phase], order, gen))
            labels = pd.DataFrame({"id": frame["id"], "label": ((pred >= 5) if by_digit else pred).astype(int)})
            scores[phase] = evaluate(task, phase, lambda out, f=labels: f.to_csv(out / "predictions.csv", index=False))
        picker.add(name, scores)
    picker.conclude()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
