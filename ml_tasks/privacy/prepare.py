"""Write the privacy task's data: two membership-inference "worlds" built from scikit-learn's digits, offline.

Run by `researchbench.benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/privacy>

Images: sklearn's 8x8 digits (/16) pasted at a random offset (0..2 each way) on a blank 10x10 canvas with
Gaussian pixel noise (sd 0.05), flattened to 100 float32 values in [0, 1]. The 1797 images are split at
random into five disjoint parts: each world's 500 candidates, each world's private pool of 200 (never
released) and a public auxiliary pool of 397 (same distribution, never a candidate).

Each world is a hidden draw (version 4.0.0): its members are a hidden share of the candidates, at a rate
of its own for every class; its target model (one ReLU hidden layer of 128, the shape of
baseline/target_model.py) is trained on its members together with a hidden number of its private images,
by a training recipe drawn for that world alone (`draw_recipe`: how long, how fast, how large the batches,
how strong the weight penalty, and which perturbations of the training images each epoch, how strong)
and a secret random state. `target_model.train`, the documented recipe agents may call, is of the same
kind but is not any world's. The val and test worlds are independent draws, so the test world's recipe and
membership process are unseen in val. Candidates are stored in the order of their ids, a random
relabelling, so neither the order, the ids nor any file size says who is a member. Only the evaluator sees
the membership labels; `benchmarks/oracle_privacy.py` reads the hidden draw through `draw_worlds`.
Deterministic: fixed seeds, pinned numerics (baseline/numerics.py), uncompressed .npz files.

    public/aux.npz                  x (397, 100) float32, y (397,) int64   the auxiliary pool
    public/target_model.npz         w1, b1, w2, b2 float32                the val world's target model
    public/candidates.npz           id, x, y                              the val world's candidates
    test_inputs/target_model.npz    the test world's target model         (final test phase only)
    test_inputs/candidates.npz      the test world's candidates           (final test phase only)
    labels/{val,test}_membership.csv  id, member (1 = in the target's training set)
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "baseline"))
import numerics  # noqa: E402  (harness-owned, shipped with the driver)

if __name__ == "__main__":  # the harness runs prepare as a script, a fresh process; tests import it
    numerics.pin()

import numpy as np  # noqa: E402

import target_model  # noqa: E402
from task_runtime.datasets import prepare_main  # noqa: E402
from task_runtime.digits import digit_images, on_canvas  # noqa: E402

SEED = 20261128
N_CANDIDATES = 500  # per world
N_PRIVATE = 200  # per world: the pool its target's undisclosed extra training images come from
CANVAS, NOISE = 10, 0.05
WORLDS = ("val", "test")


@dataclass(frozen=True)
class Recipe:
    """One world's hidden training recipe (the architecture is fixed: target_model.SHAPES)."""

    epochs: int
    learning_rate: float
    batch_size: int
    alpha: float  # L2 penalty
    noise_sd: float  # Gaussian pixel noise added to every training image each epoch (0: none)
    shift_rate: float  # share of training images moved by one pixel each epoch (0: none)
    drop_rate: float  # share of pixels blanked each epoch (0: none)


@dataclass(frozen=True)
class World:
    """One world's hidden draw: its candidates, who of them are members, and how its target was trained."""

    rows: np.ndarray  # candidate rows of the image table, in id order
    ids: np.ndarray
    member: np.ndarray  # bool, per candidate
    private: np.ndarray  # rows of the private images the target also trained on
    recipe: Recipe
    state: int  # the target's random state


def log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def draw_recipe(rng: np.random.Generator) -> Recipe:
    """A world's training recipe, from a hidden distribution; every perturbation kind is present or not."""
    return Recipe(epochs=int(round(log_uniform(rng, 60, 400))), learning_rate=log_uniform(rng, 5e-4, 4e-3),
                  batch_size=int(rng.choice([32, 64, 128, 256])), alpha=log_uniform(rng, 1e-5, 1e-2),
                  noise_sd=float(rng.uniform(0.02, 0.12)) if rng.random() < 0.5 else 0.0,
                  shift_rate=float(rng.uniform(0.2, 0.7)) if rng.random() < 0.5 else 0.0,
                  drop_rate=float(rng.uniform(0.03, 0.15)) if rng.random() < 0.5 else 0.0)


def perturbed(x: np.ndarray, recipe: Recipe, rng: np.random.Generator) -> np.ndarray:
    """One epoch's copy of the training images under the recipe's perturbations (each image its own draw)."""
    out = x.reshape(-1, CANVAS, CANVAS).copy()
    if recipe.shift_rate > 0:
        moved = np.flatnonzero(rng.random(len(out)) < recipe.shift_rate)
        steps = rng.integers(-1, 2, size=(len(moved), 2))
        padded = np.pad(out, ((0, 0), (1, 1), (1, 1)))
        for i, (dy, dx) in zip(moved, steps):
            out[i] = padded[i, 1 + dy:1 + dy + CANVAS, 1 + dx:1 + dx + CANVAS]
    if recipe.drop_rate > 0:
        out[rng.random(out.shape) < recipe.drop_rate] = 0.0
    if recipe.noise_sd > 0:
        out = out + rng.normal(0.0, recipe.noise_sd, size=out.shape)
    return np.clip(out, 0.0, 1.0).reshape(len(x), -1)


def train_hidden(x: np.ndarray, y: np.ndarray, recipe: Recipe, random_state: int) -> dict[str, np.ndarray]:
    """Fit a world's recipe on (x, y): scikit-learn's MLPClassifier (one ReLU hidden layer of 128, Adam),
    one epoch per `partial_fit` on that epoch's perturbed copy; `random_state` seeds everything."""
    from sklearn.neural_network import MLPClassifier

    rng = np.random.default_rng(random_state)
    model = MLPClassifier(hidden_layer_sizes=(target_model.HIDDEN,), alpha=recipe.alpha, batch_size=recipe.batch_size,
                          learning_rate_init=recipe.learning_rate, random_state=random_state)
    x = np.asarray(x, np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(recipe.epochs):
            model.partial_fit(perturbed(x, recipe, rng), y, classes=np.arange(target_model.N_CLASSES))
    (w1, w2), (b1, b2) = model.coefs_, model.intercepts_
    return {k: v.astype(np.float32) for k, v in {"w1": w1, "b1": b1, "w2": w2, "b2": b2}.items()}


def membership(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Members: a hidden share of the candidates (0.35-0.65), each class at its own rate around it."""
    share = rng.uniform(0.35, 0.65)
    member = np.zeros(len(y), dtype=bool)
    for c in np.unique(y):
        rows = np.flatnonzero(y == c)
        rate = float(np.clip(share + rng.normal(0.0, 0.08), 0.2, 0.8))
        member[rng.choice(rows, int(round(rate * len(rows))), replace=False)] = True
    return member


def draw_worlds() -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, World]]:
    """The images (x, y), the auxiliary pool's rows and every world's hidden draw (no model is trained here)."""
    rng = np.random.default_rng(SEED)
    images, y = digit_images()
    x = on_canvas(images, CANVAS, NOISE, rng)
    perm = rng.permutation(len(y))
    cut = np.cumsum([N_CANDIDATES, N_CANDIDATES, N_PRIVATE, N_PRIVATE])
    parts = dict(zip(("val", "test", "val_private", "test_private", "aux"), np.split(perm, cut)))
    ids = rng.permutation(2 * N_CANDIDATES)  # candidate ids: a random relabelling, disjoint across worlds
    states = np.random.SeedSequence(SEED).generate_state(len(WORLDS))  # not small integers an attack could guess
    worlds = {}
    for w, name in enumerate(WORLDS):
        world_ids = ids[w * N_CANDIDATES:(w + 1) * N_CANDIDATES]
        order = np.argsort(world_ids)
        rows = parts[name][order]
        member = membership(y[rows], rng)
        pool = parts[f"{name}_private"]
        private = np.sort(rng.choice(pool, int(rng.integers(N_PRIVATE // 2, N_PRIVATE + 1)), replace=False))
        worlds[name] = World(rows=rows, ids=world_ids[order].astype(np.int64), member=member, private=private,
                             recipe=draw_recipe(rng), state=int(states[w]))
    return x, y, np.sort(parts["aux"]), worlds


def training_rows(world: World) -> np.ndarray:
    """The rows the world's target trained on: its members, then its private images."""
    return np.concatenate([world.rows[world.member], world.private])


def build(out: Path) -> None:
    x, y, aux, worlds = draw_worlds()
    folders = {"val": out / "public", "test": out / "test_inputs"}
    for folder in (*folders.values(), out / "labels"):
        folder.mkdir(parents=True, exist_ok=True)
    np.savez(out / "public" / "aux.npz", x=x[aux], y=y[aux])
    for name, world in worlds.items():
        train = training_rows(world)
        weights = train_hidden(x[train], y[train], world.recipe, world.state)
        np.savez(folders[name] / "target_model.npz", **weights)
        np.savez(folders[name] / "candidates.npz", id=world.ids, x=x[world.rows], y=y[world.rows])
        lines = [f"{i},{int(m)}" for i, m in zip(world.ids, world.member)]
        (out / "labels" / f"{name}_membership.csv").write_text("id,member\n" + "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
