"""representation_learning's 1.0: an encoder trained with every label on the nuisance-free digits, scored
by the task's linear probe.

    python benchmarks/oracle_representation_learning.py

The task's agents pretrain on 1,000 unlabeled images; the evaluator fits a logistic-regression probe on
the embeddings of 200 labelled ones. Every image is one of sklearn's digits drawn through hidden
per-image nuisances (ml_tasks/representation_learning/prepare.py: shape, brightness, place, clutter,
background, noise). The oracle knows the generator: it replays it to recover, for every image, the true
digit and the clean 8x8 image it was drawn from (centred on the 16x16 canvas, no nuisance), trains the
reference's CNN (reference/encoder.py's Encoder, 32-dimensional output) with cross-entropy through a
linear classifier on the clean images of the 1,000 unlabeled and 200 probe-training images with their
labels (random shifts of up to 2 pixels and light pixel noise; the validation and test images untouched),
and embeds the clean version of each probe, validation and test image: the best any encoder can give
the probe, since each observed image is a nuisance-corrupted copy of its clean one. Candidates: the
32-dimensional code, the 10 logits, three such networks' logits side by side (30 dimensions), and for
comparison the same CNN trained with every label on the observed images (what labels alone buy on the
drawn data, without knowing the nuisance); the best on validation `probe_accuracy` is scored once on the
hidden test set with the task's own evaluator, whose probe is fitted exactly as in a run. Torch runs
pinned as the driver pins it (one thread, portable kernels). About two CPU-minutes.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from oracle_common import BestOnVal, evaluate, prepared
from researchbench.task_runtime import warm_up_torch
from researchbench.task_runtime.digits import digit_images

EPOCHS, BATCH, LR, MAX_SHIFT, NOISE, WIDTH, SEEDS = 40, 64, 3e-3, 2, 0.03, 32, (0, 1, 2)
PHASES = ("probe_train", "val", "test")


def load_module(name: str, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def replay(task, gen) -> dict[str, dict[str, np.ndarray]]:
    """Per set (unlabeled, probe_train, val, test): the observed images, the clean ones, the true digits,
    in the order of the set's file (prepare.py's draws, replayed and checked against the files)."""
    data = gen.generate()
    images, _ = digit_images()
    side = gen.CANVAS
    clean = np.zeros((len(images), side, side), dtype=np.float32)
    top = (side - 8) // 2
    clean[:, top:top + 8, top:top + 8] = images
    clean = clean.reshape(len(images), -1)
    files = {"unlabeled": task.public_dir / "unlabeled.npz", "probe_train": task.public_dir / "probe_train_inputs.npz",
             "val": task.public_dir / "val_inputs.npz", "test": task.test_inputs_dir / "test_inputs.npz"}
    out = {}
    for name, path in files.items():
        rows = data["parts"][name]
        rows = np.sort(rows) if name == "unlabeled" else rows[np.argsort(data["ids"][rows], kind="stable")]
        with np.load(path) as stored:
            assert np.array_equal(data["x"][rows], stored["x"]), "the replay disagrees with the prepared files"
            if name != "unlabeled":
                assert np.array_equal(data["ids"][rows], stored["id"])
                out[name] = {"id": stored["id"]}
            else:
                out[name] = {}
        out[name].update({"x": data["x"][rows], "clean": clean[rows], "y": data["y"][rows]})
    return out


def shifted(torch, x, max_shift: int, noise: float, side: int):
    """Random translations of up to max_shift pixels (zero fill) and Gaussian pixel noise."""
    images = torch.nn.functional.pad(x.view(-1, 1, side, side), (max_shift,) * 4)
    n = len(x)
    dy, dx = torch.randint(0, 2 * max_shift + 1, (n,)), torch.randint(0, 2 * max_shift + 1, (n,))
    rows = dy.view(n, 1) + torch.arange(side).view(1, side)
    cols = dx.view(n, 1) + torch.arange(side).view(1, side)
    out = images[torch.arange(n).view(n, 1, 1), 0, rows.view(n, side, 1), cols.view(n, 1, side)].unsqueeze(1)
    return (out + noise * torch.randn_like(out)).clamp(0, 1)


def train(ref, x: np.ndarray, y: np.ndarray, seed: int, side: int):
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
            loss = nn.functional.cross_entropy(classifier(encoder(shifted(torch, xs[idx], MAX_SHIFT, NOISE, side))),
                                               ys[idx])
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
    ref = load_module("rl_reference", task.spec.task_dir / "reference" / "encoder.py")
    sets = replay(task, gen)
    train_x = {kind: np.concatenate([sets["unlabeled"][kind], sets["probe_train"][kind]]) for kind in ("x", "clean")}
    train_y = np.concatenate([sets["unlabeled"]["y"], sets["probe_train"]["y"]])
    clean = [train(ref, train_x["clean"], train_y, seed, gen.CANVAS) for seed in SEEDS]
    outputs = [{name: e(sets[name]["clean"]) for name in PHASES} for e in clean]
    observed = train(ref, train_x["x"], train_y, SEEDS[0], gen.CANVAS)
    seen = {name: observed(sets[name]["x"]) for name in PHASES}
    variants = {"clean images, 32-dimensional code": lambda name: outputs[0][name][0],
                "clean images, 10 logits": lambda name: outputs[0][name][1],
                f"clean images, {len(SEEDS)} networks' logits (30 dimensions)":
                    lambda name: np.concatenate([o[name][1] for o in outputs], axis=1),
                "observed images (nuisance not undone), 32-dimensional code": lambda name: seen[name][0]}
    picker = BestOnVal(task)
    for label, values in variants.items():
        ids = {name: sets[name]["id"] for name in PHASES}
        scores = {phase: evaluate(task, phase, writer({"probe_train": (ids["probe_train"], values("probe_train")),
                                                       phase: (ids[phase], values(phase))}))
                  for phase in ("val", "test")}
        picker.add(label, scores, shown=f"supervised CNN, {label}")
    picker.conclude()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
