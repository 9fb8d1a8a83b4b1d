"""representation_learning's 1.0: an encoder trained with every label, scored by the task's linear probe.

    python benchmarks/oracle_representation_learning.py

The task's agents pretrain on 1,000 unlabeled images; the evaluator fits a logistic-regression probe on
the embeddings of 200 labelled ones. The upper bound of self-supervised pretraining, as the
literature reports it, is supervised training of the same encoder with the labels of the pretraining
data (Chen et al. 2020, SimCLR's "supervised" row). The oracle replays the generator
(ml_tasks/representation_learning/prepare.py) to recover the true digit of every unlabeled image,
adds the probe-training images with their hidden labels (1,200 labelled images, the validation and
test images untouched), and trains the reference's CNN (reference/encoder.py, 32-dimensional output)
with cross-entropy through a linear classifier, on random shifts covering the full displacement range
and pixel noise. Candidates for the embedding: the 32-dimensional code, the 10 logits, and three
such networks' logits side by side (30 dimensions, an ensemble the probe combines); the best on
validation `probe_accuracy` is scored once on the hidden test set with the task's own evaluator,
whose probe is fitted exactly as in a run. Torch runs pinned as the driver pins it (one thread,
portable kernels). About two CPU-minutes.
"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pandas as pd

from oracle_common import BestOnVal, evaluate, prepared
from task_runtime import warm_up_torch
from task_runtime.digits import digit_images, on_canvas

EPOCHS, BATCH, LR, MAX_SHIFT, NOISE, WIDTH, SEEDS = 40, 64, 3e-3, 4, 0.05, 32, (0, 1, 2)


def load_module(name: str, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def labelled_images(task, gen) -> tuple[np.ndarray, np.ndarray]:
    """The unlabeled images with their true digits (prepare.py's draws, replayed) plus the probe's
    training images with their hidden labels."""
    images, y = digit_images()
    rng = np.random.default_rng(gen.SEED)
    x = on_canvas(images, gen.CANVAS, gen.NOISE, rng)
    order = gen.stratified_order(y, rng)
    unlabeled = np.sort(order[:gen.SIZES["unlabeled"]])
    assert np.array_equal(x[unlabeled], np.load(task.public_dir / "unlabeled.npz")["x"]), "the replay disagrees"
    probe = np.load(task.public_dir / "probe_train_inputs.npz")
    labels = pd.read_csv(task.labels_dir / "probe_train_labels.csv").set_index("id").loc[probe["id"], "y"].to_numpy()
    return np.concatenate([x[unlabeled], probe["x"]]), np.concatenate([y[unlabeled], labels])


def train(ref, x: np.ndarray, y: np.ndarray, seed: int):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    encoder = ref.Encoder(WIDTH)
    classifier = nn.Linear(ref.EMBED_DIM, 10)
    params = list(encoder.parameters()) + list(classifier.parameters())
    optimizer = torch.optim.AdamW(params, lr=LR, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, EPOCHS)
    xs, ys = torch.as_tensor(x), torch.as_tensor(y)
    encoder.train()
    for _ in range(EPOCHS):
        order = torch.randperm(len(xs))
        for start in range(0, len(xs), BATCH):
            idx = order[start:start + BATCH]
            loss = nn.functional.cross_entropy(classifier(encoder(ref.augment(xs[idx], MAX_SHIFT, NOISE))), ys[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        schedule.step()
    encoder.eval()

    def embed(x_in: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with torch.no_grad():
            code = encoder(torch.as_tensor(x_in))
            return code.numpy().astype(np.float64), classifier(code).numpy().astype(np.float64)
    return embed


def writer(sets: dict[str, tuple[np.ndarray, np.ndarray]]):
    def write(out):
        dim = next(iter(sets.values()))[1].shape[1]
        lines = ["set,id," + ",".join(f"e{j}" for j in range(dim))]
        for name, (ids, values) in sets.items():
            lines += [f"{name},{i}," + ",".join(f"{v:.7g}" for v in row) for i, row in zip(ids.tolist(), values)]
        (out / "embeddings.csv").write_text("\n".join(lines) + "\n")
    return write


def main() -> int:
    warm_up_torch()
    task = prepared("representation_learning")
    gen = load_module("rl_prepare", task.spec.task_dir / "prepare.py")
    sys.path.insert(0, str(task.spec.task_dir / "reference"))
    ref = load_module("rl_reference", task.spec.task_dir / "reference" / "encoder.py")
    x, y = labelled_images(task, gen)
    inputs = {"probe_train": np.load(task.public_dir / "probe_train_inputs.npz"),
              "val": np.load(task.public_dir / "val_inputs.npz"),
              "test": np.load(task.test_inputs_dir / "test_inputs.npz")}
    embedders = [train(ref, x, y, seed) for seed in SEEDS]
    outputs = [{name: e(d["x"]) for name, d in inputs.items()} for e in embedders]
    variants = {"32-dimensional code": lambda name: outputs[0][name][0],
                "10 logits": lambda name: outputs[0][name][1],
                f"{len(SEEDS)} networks' logits (30 dimensions)":
                    lambda name: np.concatenate([o[name][1] for o in outputs], axis=1)}
    picker = BestOnVal(task)
    for label, values in variants.items():
        scores = {phase: evaluate(task, phase, writer({"probe_train": (inputs["probe_train"]["id"], values("probe_train")),
                                                       phase: (inputs[phase]["id"], values(phase))}))
                  for phase in ("val", "test")}
        picker.add(label, scores, shown=f"supervised CNN, {label}")
    picker.conclude()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
