"""Write the privacy task's data: two membership-inference "worlds" built from scikit-learn's digits, offline.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/privacy>

Images: sklearn's 8x8 digits (/16) pasted at a random offset (0..2 each way) on a blank 10x10 canvas with
Gaussian pixel noise (sd 0.05), flattened to 100 float32 values in [0, 1]: harder to generalize on than
the plain digits, so a model that fits its training images remembers them, as real models do. The 1797
images are split at random into three disjoint parts: the val world's 600 candidates, the test world's
600 candidates and a public auxiliary pool of 597 (same distribution, never a candidate).

In each world exactly half the candidates (300, within one of half of every class) are members: the
target model (baseline/target_model.py's recipe, a secret random state per world) is trained on exactly
them, in id order. Candidates are stored in the order of their ids, which are a random relabelling, so neither the
order, the ids, the class mix nor any file size says who is a member. Only the evaluator sees the
membership labels. Deterministic: fixed seeds, pinned numerics (baseline/numerics.py), uncompressed
.npz files.

    public/aux.npz                  x (597, 100) float32, y (597,) int64   the auxiliary pool
    public/target_model.npz         w1, b1, w2, b2 float32                the val world's target model
    public/candidates.npz           id, x, y                              the val world's candidates
    test_inputs/target_model.npz    the test world's target model         (final test phase only)
    test_inputs/candidates.npz      the test world's candidates           (final test phase only)
    labels/{val,test}_membership.csv  id, member (1 = in the target's training set)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "baseline"))
import numerics  # noqa: E402  (harness-owned, shipped with the driver)

if __name__ == "__main__":  # the harness runs prepare as a script, a fresh process; tests import it
    numerics.pin()

import numpy as np  # noqa: E402

import target_model  # noqa: E402
from task_runtime.datasets import prepare_main  # noqa: E402
from task_runtime.digits import digit_images, on_canvas  # noqa: E402

SEED = 20261125
N_CANDIDATES = 600  # per world; half are members
CANVAS, NOISE = 10, 0.05
WORLDS = ("val", "test")


def membership(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Exactly half of the candidates are members, and within one of half of every class: sort by
    (class, random key) and take every other row."""
    order = np.lexsort((rng.random(len(y)), y))
    member = np.zeros(len(y), dtype=bool)
    member[order[::2]] = True
    return member


def target_states() -> dict[str, int]:
    """Each world's target model's secret random state (not a small integer an attack could guess)."""
    return dict(zip(WORLDS, (int(s) for s in np.random.SeedSequence(SEED).generate_state(len(WORLDS)))))


def build(out: Path) -> None:
    rng = np.random.default_rng(SEED)
    images, y = digit_images()
    x = on_canvas(images, CANVAS, NOISE, rng)
    perm = rng.permutation(len(y))
    parts = {"val": perm[:N_CANDIDATES], "test": perm[N_CANDIDATES:2 * N_CANDIDATES]}
    aux = np.sort(perm[2 * N_CANDIDATES:])
    ids = rng.permutation(2 * N_CANDIDATES)  # candidate ids: a random relabelling, disjoint across worlds
    states = target_states()
    folders = {"val": out / "public", "test": out / "test_inputs"}
    for folder in (*folders.values(), out / "labels"):
        folder.mkdir(parents=True, exist_ok=True)
    np.savez(out / "public" / "aux.npz", x=x[aux], y=y[aux])
    for w, world in enumerate(WORLDS):
        world_ids = ids[w * N_CANDIDATES:(w + 1) * N_CANDIDATES]
        order = np.argsort(world_ids)  # everything below, the target's training rows too, in id order
        rows, world_ids = parts[world][order], world_ids[order].astype(np.int64)
        member = membership(y[rows], rng)
        weights = target_model.train(x[rows[member]], y[rows[member]], random_state=states[world])
        np.savez(folders[world] / "target_model.npz", **weights)
        np.savez(folders[world] / "candidates.npz", id=world_ids, x=x[rows], y=y[rows])
        lines = [f"{i},{int(m)}" for i, m in zip(world_ids, member)]
        (out / "labels" / f"{world}_membership.csv").write_text("id,member\n" + "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
