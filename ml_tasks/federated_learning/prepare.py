"""Write the federated_learning task's data: sklearn's digits spread over 10 non-IID clients, each with a
scanner of its own.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/federated_learning>

Offline and deterministic (bundled digits, fixed seeds, uncompressed .npz with fixed zip timestamps).
The training part (60% per class) is split over the clients with label proportions drawn per class
from Dirichlet(0.1) (Hsu et al. 2019), so most clients see only a few classes and shard sizes differ.

Version 4.0.0 adds a feature skew on top of the label skew: every client k has a hidden scanner, drawn
once from NUISANCE_SEED (`draw_scanners`), that renders each of its 8x8 digits onto a CANVAS x CANVAS
canvas (`render`):
  - the digit is pasted at the client's own offset (0..CANVAS-8 each way);
  - its strokes are thickened by one pixel to the right, one pixel down, or left alone (the client's);
  - it is multiplied by the client's gain (its brightness, uniform in GAIN);
  - the client's background is added: PATTERN_PIXELS canvas pixels of its own, at intensities of its
    own (uniform in PATTERN_LEVEL), whatever the digit;
  - Gaussian pixel noise of the client's own sd (uniform in NOISE) is added and the canvas clipped to
    [0, 1].
The validation and test images (20% per class each) are each rendered by one of the ten scanners,
drawn uniformly and independently of the digit, so a scanner's traces, which go with its clients'
few classes in training, say nothing about the digit on the scored images. None of this is in the
files: `generate()` returns the hidden draws for benchmarks/oracle_federated_learning.py. Layout under
--out:

    public/client{0..9}.npz        x (n, 81) float32 in [0, 1], y (n,) int64   (driver only, one client per call)
    public/val_inputs.npz          id, x                                        (agent-visible)
    test_inputs/test_inputs.npz    id, x                                        (final test phase only)
    labels/val_labels.csv          id, y                                        (evaluator only)
    labels/test_labels.csv         id, y                                        (evaluator only)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from task_runtime.datasets import prepare_main, stratified_split, write_npz_eval_splits
from task_runtime.digits import digit_images

N_CLIENTS = 10
ALPHA = 0.1
MIN_SHARD = 30  # redraw the Dirichlet split until every client has at least this many examples
SEED = 20261125
NUISANCE_SEED = 20261201  # the scanners and their per-image noise (version 4.0.0); fixed: changing it changes the task
FRACTIONS = (0.6, 0.2)  # train, val; the rest is test (stratified per class)
CANVAS = 9  # 81 pixels: the pooled LDA's statistics (10 + 810 + 3,321 numbers) still fit one message
GAIN = (0.4, 1.0)
PATTERN_PIXELS = 8
PATTERN_LEVEL = (0.2, 0.6)
NOISE = (0.0, 0.08)
STROKES = ("as drawn", "thicker to the right", "thicker downwards")


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The digits as (n, 8, 8) float32 pixels in [0, 1] and their labels."""
    return digit_images()


def stratified_parts(y: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return stratified_split(y, (*FRACTIONS, 1 - sum(FRACTIONS)), rng, shuffle=False)


def dirichlet_shards(y: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """Per class, cut its (shuffled) examples among the clients in Dirichlet(ALPHA) proportions."""
    while True:
        shards: list[list[np.ndarray]] = [[] for _ in range(N_CLIENTS)]
        for cls in np.unique(y):
            idx = rng.permutation(np.flatnonzero(y == cls))
            cuts = (np.cumsum(rng.dirichlet([ALPHA] * N_CLIENTS)) * len(idx)).astype(int)[:-1]
            for client, part in enumerate(np.split(idx, cuts)):
                shards[client].append(part)
        merged = [rng.permutation(np.concatenate(s)) for s in shards]
        if min(map(len, merged)) >= MIN_SHARD:
            return merged


def draw_scanners(rng: np.random.Generator) -> list[dict[str, object]]:
    """Each client's hidden scanner: offset (dy, dx), stroke (an index into STROKES), gain, background
    (CANVAS * CANVAS values, PATTERN_PIXELS of them nonzero) and noise sd."""
    scanners = []
    for _ in range(N_CLIENTS):
        offset = rng.integers(0, CANVAS - 8 + 1, size=2)
        stroke = int(rng.integers(0, len(STROKES)))
        gain = float(rng.uniform(*GAIN))
        background = np.zeros(CANVAS * CANVAS)
        background[rng.choice(CANVAS * CANVAS, PATTERN_PIXELS, replace=False)] = rng.uniform(*PATTERN_LEVEL,
                                                                                           PATTERN_PIXELS)
        scanners.append({"offset": offset, "stroke": stroke, "gain": gain, "background": background,
                         "noise": float(rng.uniform(*NOISE))})
    return scanners


def thicken(canvas: np.ndarray, stroke: int) -> np.ndarray:
    """(n, CANVAS, CANVAS) strokes thickened by one pixel to the right (1), downwards (2), both (3) or not (0)."""
    out = canvas.copy()
    if stroke in (1, 3):
        out[:, :, 1:] = np.maximum(out[:, :, 1:], out[:, :, :-1].copy())
    if stroke in (2, 3):
        out[:, 1:, :] = np.maximum(out[:, 1:, :], out[:, :-1, :].copy())
    return out


def render(images: np.ndarray, scanner: dict, rng: np.random.Generator) -> np.ndarray:
    """(n, 8, 8) digits in [0, 1] through one scanner: (n, CANVAS * CANVAS) float32 in [0, 1]."""
    dy, dx = scanner["offset"]
    canvas = np.zeros((len(images), CANVAS, CANVAS))
    canvas[:, dy:dy + 8, dx:dx + 8] = images
    drawn = thicken(canvas, scanner["stroke"]).reshape(len(images), -1) * scanner["gain"] + scanner["background"]
    noisy = drawn + rng.normal(0.0, scanner["noise"], size=drawn.shape)
    return np.clip(noisy, 0.0, 1.0).astype(np.float32)


def generate() -> dict[str, object]:
    """Everything `build` writes and the hidden draws no file shows: the rendered images `x` (n, 81), the
    digits `y`, the public `ids`, the `parts` (train / val / test row indices), the training `shards`
    (row indices per client), each row's `scanner` (its client) and the ten `scanners`. The oracle
    replays this to know what no estimator is told."""
    images, y = load_digits()
    rng = np.random.default_rng(SEED)
    parts = stratified_parts(y, rng)
    ids = rng.permutation(len(y))
    train = parts["train"]
    shards = [train[shard] for shard in dirichlet_shards(y[train], rng)]
    nuisance = np.random.default_rng(NUISANCE_SEED)
    scanners = draw_scanners(nuisance)
    owner = np.full(len(y), -1, dtype=np.int64)
    for client, rows in enumerate(shards):
        owner[rows] = client
    for phase in ("val", "test"):  # each scored image through one scanner, independent of its digit
        owner[parts[phase]] = nuisance.integers(0, N_CLIENTS, size=len(parts[phase]))
    x = np.zeros((len(y), CANVAS * CANVAS), dtype=np.float32)
    for client, scanner in enumerate(scanners):
        rows = np.flatnonzero(owner == client)
        x[rows] = render(images[rows], scanner, nuisance)
    return {"x": x, "y": y, "ids": ids, "parts": parts, "shards": shards, "scanner": owner, "scanners": scanners}


def build(out: Path) -> None:
    data = generate()
    x, y = data["x"], data["y"]
    for folder in ("public", "test_inputs", "labels"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    for client, idx in enumerate(data["shards"]):
        np.savez(out / "public" / f"client{client}.npz", x=x[idx], y=y[idx])
    write_npz_eval_splits(out, x, y, data["ids"], data["parts"])


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
