"""Write the unlearning task's data: digits by several writers, a classifier trained on all of them, and
the request to forget one writer.

Run by `researchbench.benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/unlearning> [--scale lite|gpu]

The generator (version 5.0.0; all draws from SEED, so two runs write the same bytes). Each of sklearn's
1797 digits (/16) is assigned to one of N_WRITERS writers at random (writer 0, the one to forget, with
chance FORGOTTEN_SHARE, the others equally), who writes it `copies` times (SCALES: once at the lite scale;
each copy has its own jitter and noise). Every writer has a hidden hand (`writer_styles`): a centre in a
6-number style space, a per-image spread around it drawn from WOBBLE, and a home position on the canvas;
every image draws its own style from its writer's hand (`image_style`): a shear, a rotation, a horizontal
and a vertical stretch (an affine warp of the 8x8 digit), a stroke weight (a gamma on the intensities) and a
blur, of a size set by the writer's STYLE strength (FORGOTTEN_STYLE for writer 0, far larger, so models that
never saw that writer do poorly on their digits). The warped digit is pasted at the writer's home offset
(0..2 each way), jittered by up to one pixel, on a blank 10x10 canvas with Gaussian pixel noise (sd 0.1),
flattened row-major to 100 float32 values in [0, 1]. None of the writers, hands or styles is written to
any file agent code sees.

Splits (`whole_digits`: with several copies of a digit, all of them on one side of every cut): writer 0's
images are shuffled, the first `forget` of them are training images (the forget set) and the rest are never
trained on (the unseen images of the forgotten writer, split in half between the val and test audits). The
other writers' images are shuffled: the first `retained` of them are training images (the retained set), the
rest are never trained on and split in half between validation and test (the held-out images; with
several copies, whole digits on each side).
Agent code gets a random `retain_public` of the retained images; the others are split in half between the
val and test audits. The original model is scikit-learn's MLPClassifier (100-`hidden`-10, ReLU, Adam,
fixed random_state) trained on every training image, the forget set included; it fits them all.

The audit's reference models: REFERENCES networks of the same architecture trained from scratch on the
retained images only (never a forget image), with the recipe `train_reference` (Adam, each batch also
shown rolled by up to 2 pixels on the canvas), each from its own seed, on `task_runtime.pick_device()`'s
device (CUDA when a GPU is visible, so a GPU-prepared gpu-scale workspace rounds differently from a
CPU-prepared one; the lite scale always trains on the CPU). For every forget, held-out and unseen image the
labels keep the median and the standard deviation over them of the true class's log-odds and the fraction
of them that classify it correctly: the evaluator's attacks compare the scored model with what a model that
never saw the image does on that very image (difficulty calibration; Watson et al. 2022, Carlini et al.
2022). For the forgotten writer's images (forget and unseen) they also keep every reference's log-odds, for
the evaluator's retrain test (is the model one more draw of the references there?). Layout under --out:

    public/original_model.npz   w1 (100, H), b1 (H,), w2 (H, 10), b2 (10,) float32 (H = the scale's `hidden`)
    public/forget.npz           x (n, 100) float32, y (n,) int64       the images to forget
    public/retain_subset.npz    x, y                                    the retained images agent code may use
    test_inputs/README.txt      the test phase needs no inputs (the model is scored on hidden images)
    labels/eval_val.npz, labels/eval_test.npz
        forget_x, forget_y        the forget set (members whose membership should be undetectable)
        forget_refmed, forget_refsd, forget_refacc, forget_refodds (n, REFERENCES)    the reference models'
                                  log-odds median, sd, accuracy, and each one's log-odds
        heldout_x, heldout_y      validation / test images of the other writers (never trained on)
        heldout_refmed, heldout_refsd, heldout_refacc
        unseen_x, unseen_y        half each of the forgotten writer's never-trained images
        unseen_refmed, unseen_refsd, unseen_refacc, unseen_refodds
        retain_x, retain_y        half each of the hidden retained images (members to keep)
        hidden                    the width H the evaluator checks the weights against (gpu scale only:
                                  labels without it mean 128)

Scales (SCALES, `--scale`): lite is the task as published (1797 images: forget 300, retained 800, width
128, the references on the CPU); gpu has every digit written 8 times (14,376 images: forget 2,400, retained
6,400 of which 800 public), a 512-wide network and larger reference batches, sized for a GPU
(about a CPU-minute to prepare here).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one BLAS thread: the same sums in the same order, so the same model bytes


import numpy as np  # noqa: E402

from task_runtime.datasets import prepare_main  # noqa: E402
from task_runtime.digits import digit_images  # noqa: E402

SEED = 20271203  # fixed: changing it changes the task (bump the version)
N_WRITERS = 6
STYLE = 0.5  # the size of every other writer's style (1 = the largest warp below)
FORGOTTEN_STYLE = 2.0  # the forgotten writer's: far from every other hand, so models that never saw it do poorly on it
FORGOTTEN_SHARE = 0.3  # the chance that a digit is the forgotten writer's (the others share the rest equally)
WOBBLE = (0.05, 0.25)  # each writer's per-image spread around their own style centre is drawn from this range
CANVAS = 10
NOISE = 0.1
REFERENCES = 8  # reference models per audit
# Everything a scale changes. copies: how many times each of the 1797 digits is drawn; forget: training
# images of the forgotten writer (at least; the forget set; their other images are never trained on, held out
# for the audit); retained: training images of the other writers (at least); retain_public: of them, the ones
# agent code gets; hidden: the
# network's width; original_epochs: the original's max_iter; reference_epochs, reference_batch: the
# references' recipe (each batch is also shown shifted, so a step sees twice the batch).
SCALES = {
    "lite": {"copies": 1, "forget": 300, "retained": 800, "retain_public": 100, "hidden": 128, "original_epochs": 300,
             "reference_epochs": 150, "reference_batch": 32},
    "gpu": {"copies": 8, "forget": 2400, "retained": 6400, "retain_public": 800, "hidden": 512, "original_epochs": 100,
            "reference_epochs": 60, "reference_batch": 128},
}
REFERENCE_SEEDS = [1000 + k for k in range(REFERENCES)]  # the oracle retrains with other seeds


def evaluator():
    """The task's evaluate.py, loaded from beside this file: the one home of the audit's constants."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("unlearning_evaluate", Path(__file__).resolve().parent / "evaluate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SD_FLOOR = evaluator().SD_FLOOR  # the reference log-odds sd is at least this (evaluate.py's)


def writer_styles(rng: np.random.Generator) -> list[dict[str, float]]:
    """Each writer's hidden hand: a centre in style space (6 numbers in [-1, 1]), how far each of their images
    strays from it (`wobble`, drawn per writer from WOBBLE), the size of their warps (STYLE, FORGOTTEN_STYLE for
    writer 0) and a home position on the canvas."""
    out = []
    for writer in range(N_WRITERS):
        out.append({"centre": rng.uniform(-1.0, 1.0, 6), "wobble": float(rng.uniform(*WOBBLE)),
                    "size": FORGOTTEN_STYLE if writer == 0 else STYLE,
                    "home_y": int(rng.integers(0, 3)), "home_x": int(rng.integers(0, 3))})
    return out


def image_style(hand: dict, rng: np.random.Generator) -> dict[str, float]:
    """One image's own style: its writer's centre moved by the writer's wobble (per image), mapped to a shear,
    a rotation, two stretches (an affine warp of the 8x8 digit), a stroke weight (gamma) and a blur."""
    g, u = hand["size"], hand["centre"] + hand["wobble"] * rng.normal(0.0, 1.0, 6)
    return {"shear": g * 0.3 * u[0], "rotation": g * 0.2 * u[1], "stretch_x": 1 + g * (0.125 * u[2] - 0.025),
            "stretch_y": 1 + g * (0.125 * u[3] - 0.025), "gamma": float(np.exp(g * 0.5 * u[4])),
            "blur": max(0.0, g * 0.25 * (u[5] + 1))}


def warp(image: np.ndarray, style: dict[str, float]) -> np.ndarray:
    """One 8x8 digit in [0, 1] drawn in one image's style."""
    from scipy import ndimage

    c, s = np.cos(style["rotation"]), np.sin(style["rotation"])
    forward = np.array([[c, -s], [s, c]]) @ np.array([[1.0, style["shear"]], [0.0, 1.0]]) \
        @ np.diag([style["stretch_y"], style["stretch_x"]])
    inverse = np.linalg.inv(forward)
    centre = np.array([3.5, 3.5])
    out = ndimage.affine_transform(image.astype(np.float64), inverse, offset=centre - inverse @ centre, order=1,
                                   mode="constant")
    if style["blur"] > 0.05:
        out = ndimage.gaussian_filter(out, style["blur"])
    out = np.clip(out, 0.0, None)
    top = out.max()
    return (out / top if top > 0 else out) ** style["gamma"]


def generate(scale: str = "lite") -> dict[str, np.ndarray]:
    """Every image (x, y), its writer, and the role of each (index arrays): what `build` writes and
    benchmarks/oracle_unlearning.py replays."""
    config = SCALES[scale]
    digits, labels = digit_images()
    base = np.tile(np.arange(len(labels)), config["copies"])  # image i draws digit base[i]
    images, y = digits[base], labels[base]
    rng = np.random.default_rng(SEED)
    share = np.array([FORGOTTEN_SHARE] + [(1 - FORGOTTEN_SHARE) / (N_WRITERS - 1)] * (N_WRITERS - 1))
    writer = rng.choice(N_WRITERS, len(labels), p=share)[base]  # a digit's copies are all by one writer
    hands = writer_styles(rng)
    canvas = np.zeros((len(y), CANVAS, CANVAS))
    for i in range(len(y)):
        hand = hands[writer[i]]
        dy = int(np.clip(hand["home_y"] + rng.integers(-1, 2), 0, CANVAS - 8))
        dx = int(np.clip(hand["home_x"] + rng.integers(-1, 2), 0, CANVAS - 8))
        canvas[i, dy:dy + 8, dx:dx + 8] = warp(images[i], image_style(hand, rng))
    noisy = canvas + rng.normal(0.0, NOISE, canvas.shape)
    x = np.clip(noisy, 0.0, 1.0).reshape(len(y), -1).astype(np.float32)
    forget, unseen = whole_digits(rng.permutation(np.flatnonzero(writer == 0)), base, config["forget"])
    retain, heldout = whole_digits(rng.permutation(np.flatnonzero(writer != 0)), base, config["retained"])
    hidden = retain[config["retain_public"]:]
    val, test = whole_digits(heldout, base, len(heldout) // 2)  # the halves: no digit in both audits
    unseen_val, unseen_test = whole_digits(unseen, base, len(unseen) // 2)
    return {"x": x, "y": y, "writer": writer, "base": base, "forget": forget,
            "retain": retain, "retain_public": retain[:config["retain_public"]],
            "retain_val": hidden[: len(hidden) // 2], "retain_test": hidden[len(hidden) // 2:],
            "val": val, "test": test, "unseen_val": unseen_val, "unseen_test": unseen_test}


def whole_digits(images: np.ndarray, base: np.ndarray, at_least: int) -> tuple[np.ndarray, np.ndarray]:
    """`images` (shuffled indices) cut in two with all copies of a digit on one side: the digits in the order they
    first appear, the first of them until `at_least` images are reached (one image per digit at lite: a plain
    cut at `at_least`)."""
    _, first, group = np.unique(base[images], return_index=True, return_inverse=True)
    order = np.argsort(first)
    sizes = np.bincount(group)[order]
    kept = np.zeros(len(first), dtype=bool)
    kept[order[np.cumsum(sizes) - sizes < at_least]] = True
    return images[kept[group]], images[~kept[group]]


def train_original(x: np.ndarray, y: np.ndarray, scale: str = "lite") -> dict[str, np.ndarray]:
    from sklearn.neural_network import MLPClassifier

    config = SCALES[scale]
    model = MLPClassifier(hidden_layer_sizes=(config["hidden"],), alpha=1e-4, max_iter=config["original_epochs"],
                          random_state=SEED % 2**31, tol=1e-6, n_iter_no_change=300).fit(x.astype(np.float64), y)
    (w1, w2), (b1, b2) = model.coefs_, model.intercepts_
    return {k: v.astype(np.float32) for k, v in {"w1": w1, "b1": b1, "w2": w2, "b2": b2}.items()}


def train_reference(x: np.ndarray, y: np.ndarray, seed: int, epochs: int | None = None, scale: str = "lite",
                    device: str = "cpu") -> dict[str, np.ndarray]:
    """A network of the task's architecture trained from scratch (Adam, cosine schedule, batches of the scale's
    reference_batch (32 at lite), each batch also shown rolled by a random offset of up to 2 pixels on the
    canvas), on `device`. The model is built and initialised on the CPU, so its start is the same everywhere."""
    import torch

    config = SCALES[scale]
    epochs, size, hidden = epochs or config["reference_epochs"], config["reference_batch"], config["hidden"]
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    xs, ys = torch.tensor(x).to(device), torch.tensor(y).to(device)
    model = torch.nn.Sequential(torch.nn.Linear(CANVAS * CANVAS, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, 10)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, epochs)
    for _ in range(epochs):
        order = torch.randperm(len(xs), generator=generator).to(device)
        for start in range(0, len(xs), size):
            batch, labels = xs[order[start:start + size]], ys[order[start:start + size]]
            dy, dx = torch.randint(-2, 3, (2,), generator=generator).tolist()
            rolled = torch.roll(batch.view(-1, CANVAS, CANVAS), (dy, dx), (1, 2)).reshape(len(batch), -1)
            loss = torch.nn.functional.cross_entropy(model(torch.cat([batch, rolled])), torch.cat([labels, labels]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        schedule.step()
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    return {"w1": state["0.weight"].T.contiguous().numpy(), "b1": state["0.bias"].numpy(),
            "w2": state["2.weight"].T.contiguous().numpy(), "b2": state["2.bias"].numpy()}


def log_odds(weights: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The true class's log-odds, log(p_y / (1 - p_y)), and whether the argmax is right, per image."""
    hidden = np.maximum(x.astype(np.float64) @ weights["w1"].astype(np.float64) + weights["b1"], 0.0)
    logits = hidden @ weights["w2"].astype(np.float64) + weights["b2"]
    rows = np.arange(len(y))
    others = logits.copy()
    others[rows, y] = -np.inf
    top = others.max(axis=1)
    rest = top + np.log(np.exp(others - top[:, None]).sum(axis=1))
    return logits[rows, y] - rest, logits.argmax(axis=1) == y


def reference_stats(references: list[dict[str, np.ndarray]], x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """What models that never saw these images do on each: the median and sd of the true class's log-odds, the
    fraction that classify it correctly (the attacks' calibration) and every reference's log-odds (the
    evaluator's retrain test), each array a row per image."""
    odds, correct = zip(*(log_odds(w, x, y) for w in references))
    odds = np.array(odds)
    return {"refmed": np.median(odds, axis=0), "refsd": np.maximum(odds.std(axis=0, ddof=1), SD_FLOOR),
            "refacc": np.array(correct, dtype=np.float64).mean(axis=0), "refodds": odds.T.copy()}  # a row per image


def build(out: Path, scale: str = "lite") -> None:
    import warnings

    from task_runtime import pick_device

    device = "cpu" if scale == "lite" else pick_device()  # lite: the published bytes, made on the CPU
    data = generate(scale)
    x, y = data["x"], data["y"]
    for folder in ("public", "test_inputs", "labels"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    train = np.concatenate([data["forget"], data["retain"]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter reached: intended, the model is meant to fit its data
        np.savez(out / "public" / "original_model.npz", **train_original(x[train], y[train], scale))
    np.savez(out / "public" / "forget.npz", x=x[data["forget"]], y=y[data["forget"]])
    np.savez(out / "public" / "retain_subset.npz", x=x[data["retain_public"]], y=y[data["retain_public"]])
    (out / "test_inputs" / "README.txt").write_text(
        "The unlearning task's test phase needs no inputs: the unlearned model is scored on hidden images.\n")
    references = [train_reference(x[data["retain"]], y[data["retain"]], seed, scale=scale, device=device)
                  for seed in REFERENCE_SEEDS]
    forget = data["forget"]
    forget_stats = reference_stats(references, x[forget], y[forget])
    for phase in ("val", "test"):
        h, r, u = data[phase], data[f"retain_{phase}"], data[f"unseen_{phase}"]
        arrays = {"forget_x": x[forget], "forget_y": y[forget], "heldout_x": x[h], "heldout_y": y[h],
                  "unseen_x": x[u], "unseen_y": y[u], "retain_x": x[r], "retain_y": y[r]}
        arrays.update({f"forget_{k}": v for k, v in forget_stats.items()})
        arrays.update({f"unseen_{k}": v for k, v in reference_stats(references, x[u], y[u]).items()})
        heldout_stats = reference_stats(references, x[h], y[h])
        arrays.update({f"heldout_{k}": v for k, v in heldout_stats.items() if k != "refodds"})  # no retrain test there
        if scale != "lite":  # the lite labels stay as published (no key: width 128)
            arrays["hidden"] = np.array(SCALES[scale]["hidden"], dtype=np.int64)
        np.savez(out / "labels" / f"eval_{phase}.npz", **arrays)


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv, scales=SCALES)


if __name__ == "__main__":
    sys.exit(main())
