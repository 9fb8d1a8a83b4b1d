"""Write the federated_learning task's data: sklearn's digits spread over 10 non-IID clients, each scanning
its digits with a device of its own whose effects vary from image to image.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/federated_learning>

Offline and deterministic (bundled digits, fixed seeds, uncompressed .npz with fixed zip timestamps).
The training part (60% per class) is split over the clients with label proportions drawn per class
from Dirichlet(0.1) (Hsu et al. 2019), so most clients see only a few classes and shard sizes differ.

Version 5.0.0: every device (scanner) is a hidden *distribution* of per-image effects, drawn once from
NUISANCE_SEED (`draw_scanner`); each image gets its own draw from its device's distribution
(`draw_effects`) and is rendered onto a CANVAS x CANVAS canvas (`render`):
  - placement: the 8x8 digit is pasted at one of the (CANVAS - 7)^2 offsets, drawn from the device's own
    offset probabilities (Dirichlet(CONCENTRATION));
  - stroke: thickened by one pixel to the right, downwards, both or not at all, drawn from the device's
    own stroke probabilities (Dirichlet(CONCENTRATION));
  - contrast: the canvas raised to a power gamma, log-normal per image around the device's own median
    (log-uniform in GAMMA) with the device's own spread (uniform in GAMMA_SPREAD);
  - brightness: multiplied by a gain, log-normal per image around the device's median (log-uniform in
    GAIN) with the device's spread (uniform in GAIN_SPREAD);
  - illumination: a linear ramp across the canvas, at a direction uniform per image and a strength
    uniform in [0, the device's maximum] (uniform in RAMP), added;
  - defects: stray pixels of the device's own (how many: uniform in DEFECTS; where: its own; each at a
    level of its own, uniform in DEFECT_LEVEL), each lit on an image with the device's own probability
    for that pixel (uniform in DEFECT_RATE) at its level times a per-image factor (uniform in
    DEFECT_JITTER), added;
  - Gaussian pixel noise of the device's own sd (uniform in NOISE), then clipped to [0, 1].
The ten training clients each scanned their shard with one device (devices 0..9). The validation and
test images (20% per class each) were scanned by EVAL_DEVICES other devices drawn from the same
population (devices 10..), each image by one of them at random, independently of its digit: no scored
image comes from a device that scanned a training shard. None of this is in the files: `generate()`
returns the hidden draws (every device and every image's effects) for
benchmarks/oracle_federated_learning.py. Layout under --out:

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
NUISANCE_SEED = 20261215  # the devices and every image's effects (version 5.0.0); fixed: changing it changes the task
FRACTIONS = (0.6, 0.2)  # train, val; the rest is test (stratified per class)
CANVAS = 9  # 81 pixels: the pooled LDA's statistics (10 + 810 + 3,321 numbers) still fit one message
EVAL_DEVICES = 10  # devices 10..19 scan the validation and test images; none scanned a training shard
CONCENTRATION = 0.7  # Dirichlet concentration of a device's offset and stroke probabilities
GAIN = (0.3, 1.0)
GAIN_SPREAD = (0.1, 0.4)
GAMMA = (0.5, 2.0)
GAMMA_SPREAD = (0.0, 0.25)
RAMP = (0.0, 0.4)
DEFECTS = (6, 16)
DEFECT_LEVEL = (0.25, 0.7)
DEFECT_RATE = (0.2, 0.9)
DEFECT_JITTER = (0.6, 1.0)
NOISE = (0.0, 0.05)
STROKES = ("as drawn", "thicker to the right", "thicker downwards", "thicker both ways")
OFFSETS = [(dy, dx) for dy in range(CANVAS - 7) for dx in range(CANVAS - 7)]


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


def log_uniform(rng: np.random.Generator, bounds: tuple[float, float]) -> float:
    return float(np.exp(rng.uniform(np.log(bounds[0]), np.log(bounds[1]))))


def draw_scanner(rng: np.random.Generator) -> dict[str, object]:
    """One device: the distribution its images' effects are drawn from."""
    n_defects = int(rng.integers(DEFECTS[0], DEFECTS[1] + 1))
    return {"offset_p": rng.dirichlet([CONCENTRATION] * len(OFFSETS)),
            "stroke_p": rng.dirichlet([CONCENTRATION] * len(STROKES)),
            "gain": log_uniform(rng, GAIN), "gain_spread": float(rng.uniform(*GAIN_SPREAD)),
            "gamma": log_uniform(rng, GAMMA), "gamma_spread": float(rng.uniform(*GAMMA_SPREAD)),
            "ramp": float(rng.uniform(*RAMP)),
            "defect_pixels": rng.choice(CANVAS * CANVAS, n_defects, replace=False),
            "defect_level": rng.uniform(*DEFECT_LEVEL, n_defects),
            "defect_rate": rng.uniform(*DEFECT_RATE, n_defects),
            "noise": float(rng.uniform(*NOISE))}


def draw_effects(scanner: dict, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """n images' own effects, drawn from the device's distribution: offset (an index into OFFSETS), stroke
    (an index into STROKES), gamma, gain, the illumination ramp and the stray light (each (n, 81))."""
    offset = rng.choice(len(OFFSETS), n, p=scanner["offset_p"])
    stroke = rng.choice(len(STROKES), n, p=scanner["stroke_p"])
    gamma = scanner["gamma"] * np.exp(rng.normal(0.0, scanner["gamma_spread"], n))
    gain = scanner["gain"] * np.exp(rng.normal(0.0, scanner["gain_spread"], n))
    angle = rng.uniform(0.0, 2 * np.pi, n)
    strength = rng.uniform(0.0, scanner["ramp"], n)
    centre = (CANVAS - 1) / 2
    rows, cols = np.divmod(np.arange(CANVAS * CANVAS), CANVAS)
    direction = (np.outer(np.cos(angle), rows - centre) + np.outer(np.sin(angle), cols - centre)) / (2 * centre)
    ramp = strength[:, None] * (0.5 + direction)  # in [0, strength]: light, never less
    stray = np.zeros((n, CANVAS * CANVAS))
    lit = rng.random((n, len(scanner["defect_pixels"]))) < scanner["defect_rate"]
    level = scanner["defect_level"] * rng.uniform(*DEFECT_JITTER, size=lit.shape)
    stray[:, scanner["defect_pixels"]] = lit * level
    return {"offset": offset, "stroke": stroke, "gamma": gamma, "gain": gain, "light": ramp + stray}


def thicken(canvas: np.ndarray, stroke: np.ndarray | int) -> np.ndarray:
    """(n, CANVAS, CANVAS) strokes thickened by one pixel to the right (1), downwards (2), both (3) or not (0),
    per image."""
    stroke = np.broadcast_to(np.asarray(stroke), (len(canvas),))
    out = canvas.copy()
    right = np.isin(stroke, (1, 3))
    down = np.isin(stroke, (2, 3))
    out[right, :, 1:] = np.maximum(out[right, :, 1:], out[right, :, :-1])
    out[down, 1:, :] = np.maximum(out[down, 1:, :], out[down, :-1, :])
    return out


def render(images: np.ndarray, scanner: dict, effects: dict, rng: np.random.Generator) -> np.ndarray:
    """(n, 8, 8) digits in [0, 1] through one device with their own effects: (n, CANVAS * CANVAS) float32."""
    canvas = np.zeros((len(images), CANVAS, CANVAS))
    for i, (dy, dx) in enumerate(np.asarray(OFFSETS)[effects["offset"]]):
        canvas[i, dy:dy + 8, dx:dx + 8] = images[i]
    drawn = thicken(canvas, effects["stroke"]).reshape(len(images), -1) ** effects["gamma"][:, None]
    drawn = drawn * effects["gain"][:, None] + effects["light"]
    noisy = drawn + rng.normal(0.0, scanner["noise"], size=drawn.shape)
    return np.clip(noisy, 0.0, 1.0).astype(np.float32)


def generate() -> dict[str, object]:
    """Everything `build` writes and the hidden draws no file shows: the rendered images `x` (n, 81), the
    digits `y`, the public `ids`, the `parts` (train / val / test row indices), the training `shards`
    (row indices per client), each row's `device`, the `scanners` (devices 0..9 scanned the shards, the
    rest the scored images) and each row's `effects` (arrays over all rows). The oracle replays this to
    know what no estimator is told."""
    images, y = load_digits()
    rng = np.random.default_rng(SEED)
    parts = stratified_parts(y, rng)
    ids = rng.permutation(len(y))
    train = parts["train"]
    shards = [train[shard] for shard in dirichlet_shards(y[train], rng)]
    nuisance = np.random.default_rng(NUISANCE_SEED)
    scanners = [draw_scanner(nuisance) for _ in range(N_CLIENTS + EVAL_DEVICES)]
    device = np.full(len(y), -1, dtype=np.int64)
    for client, rows in enumerate(shards):
        device[rows] = client
    for phase in ("val", "test"):  # each scored image through one unseen device, independent of its digit
        device[parts[phase]] = N_CLIENTS + nuisance.integers(0, EVAL_DEVICES, size=len(parts[phase]))
    x = np.zeros((len(y), CANVAS * CANVAS), dtype=np.float32)
    effects = {"offset": np.zeros(len(y), np.int64), "stroke": np.zeros(len(y), np.int64),
               "gamma": np.ones(len(y)), "gain": np.ones(len(y)), "light": np.zeros((len(y), CANVAS * CANVAS))}
    for k, scanner in enumerate(scanners):
        rows = np.flatnonzero(device == k)
        drawn = draw_effects(scanner, len(rows), nuisance)
        for name, values in drawn.items():
            effects[name][rows] = values
        x[rows] = render(images[rows], scanner, drawn, nuisance)
    return {"x": x, "y": y, "ids": ids, "parts": parts, "shards": shards, "device": device, "scanners": scanners,
            "effects": effects}


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
