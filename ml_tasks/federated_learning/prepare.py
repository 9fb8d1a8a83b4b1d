"""Write the federated_learning task's data: sklearn's digits spread over 10 non-IID clients, each scanning
its digits with a device of its own whose effects vary from image to image.

Run by `researchbench.benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/federated_learning>

Offline and deterministic (bundled digits, fixed seeds, uncompressed .npz with fixed zip timestamps).
The training part (60% per class) is split over the clients with label proportions drawn per class
from Dirichlet(0.1) (Hsu et al. 2019), so most clients see only a few classes and shard sizes differ.

Version 6.0.0: every device (scanner) is a hidden *distribution* of per-image effects, drawn once from
NUISANCE_SEED (`draw_scanner`); each image gets its own draw from its device's distribution
(`draw_effects`) and is rendered onto a CANVAS x CANVAS canvas (`observe`, then noise and clipping in `render`):
  - placement: the 8x8 digit is pasted at one of the (CANVAS - 7)^2 offsets, drawn from the device's own
    offset probabilities (Dirichlet(CONCENTRATION));
  - pose: rotated (normal per image around the device's own median tilt, uniform in TILT, with its own
    spread) and sheared (likewise, SLANT) about the centre of its square;
  - stroke: thickened by one pixel to the right, downwards, both or not at all, drawn from the device's
    own stroke probabilities (Dirichlet(CONCENTRATION));
  - response: the canvas raised to a power gamma (log-normal per image around the device's own median,
    log-uniform in GAMMA, with its own spread); on FOLD_SHARE of the devices the response then folds over
    (rises to its peak at a fold point drawn per image around the device's own, then falls by a depth of
    the device's own towards full ink: strokes come out lighter in their middle than at their edges);
  - brightness: multiplied by a gain, log-normal per image around the device's median (log-uniform in
    GAIN) with the device's spread (uniform in GAIN_SPREAD);
  - light no digit explains, added: a linear illumination ramp (a random direction, a strength up to the
    device's own, RAMP); stray pixels of the device's own (how many: DEFECTS; where, at what level and how
    often: its own); and show-through: the sheet's other side, another digit of the same split, turned
    over (side to side or top to bottom, the device's own), placed like a digit, blurred (the device's own
    sd, SHOW_BLUR) and dimmed (log-normal per image around the device's own strength, SHOW_STRENGTH),
    on a share of the images of the device's own (SHOW_RATE);
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
NUISANCE_SEED = 20261128  # the devices and every image's effects (version 6.0.0); fixed: changing it changes the task
FRACTIONS = (0.6, 0.2)  # train, val; the rest is test (stratified per class)
CANVAS = 9  # 81 pixels: the pooled LDA's statistics (10 + 810 + 3,321 numbers) still fit one message
EVAL_DEVICES = 10  # devices 10..19 scan the validation and test images; none scanned a training shard
CONCENTRATION = 0.7  # Dirichlet concentration of a device's offset and stroke probabilities
TILT = (-25.0, 25.0)  # a device's median rotation of the digit, degrees (per image: around it, TILT_SPREAD sd)
TILT_SPREAD = (3.0, 12.0)
SLANT = (-0.35, 0.35)  # a device's median shear of the digit (per image: around it, SLANT_SPREAD sd)
SLANT_SPREAD = (0.0, 0.15)
GAIN = (0.4, 1.0)
GAIN_SPREAD = (0.1, 0.3)
GAMMA = (0.6, 1.6)
GAMMA_SPREAD = (0.0, 0.2)
FOLD_SHARE = 0.5  # the share of devices whose response folds over: the darkest ink comes out dimmer than its edges
FOLD_AT = (0.3, 0.6)  # a folding device's median fold point (per image: around it, FOLD_SPREAD sd)
FOLD_SPREAD = (0.03, 0.12)
FOLD_DEPTH = (0.5, 1.0)  # how far the darkest ink falls below the fold's peak
RAMP = (0.0, 0.3)
DEFECTS = (4, 12)
DEFECT_LEVEL = (0.25, 0.6)
DEFECT_RATE = (0.2, 0.8)
DEFECT_JITTER = (0.6, 1.0)
SHOW_RATE = (0.5, 1.0)  # how often the other side of the sheet shows through
SHOW_STRENGTH = (0.35, 0.8)  # its median strength, relative to full ink (per image: log-normal, SHOW_SPREAD)
SHOW_SPREAD = (0.1, 0.3)
SHOW_BLUR = (0.3, 0.9)  # sd (pixels) of the paper's blur of the other side
NOISE = (0.0, 0.04)
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
    folds = bool(rng.random() < FOLD_SHARE)
    return {"offset_p": rng.dirichlet([CONCENTRATION] * len(OFFSETS)),
            "stroke_p": rng.dirichlet([CONCENTRATION] * len(STROKES)),
            "tilt": float(rng.uniform(*TILT)), "tilt_spread": float(rng.uniform(*TILT_SPREAD)),
            "slant": float(rng.uniform(*SLANT)), "slant_spread": float(rng.uniform(*SLANT_SPREAD)),
            "gain": log_uniform(rng, GAIN), "gain_spread": float(rng.uniform(*GAIN_SPREAD)),
            "gamma": log_uniform(rng, GAMMA), "gamma_spread": float(rng.uniform(*GAMMA_SPREAD)),
            "fold_at": float(rng.uniform(*FOLD_AT)) if folds else 1.0, "fold_spread": float(rng.uniform(*FOLD_SPREAD)),
            "fold_depth": float(rng.uniform(*FOLD_DEPTH)),
            "ramp": float(rng.uniform(*RAMP)),
            "defect_pixels": rng.choice(CANVAS * CANVAS, n_defects, replace=False),
            "defect_level": rng.uniform(*DEFECT_LEVEL, n_defects),
            "defect_rate": rng.uniform(*DEFECT_RATE, n_defects),
            "show_rate": float(rng.uniform(*SHOW_RATE)), "show_strength": float(rng.uniform(*SHOW_STRENGTH)),
            "show_spread": float(rng.uniform(*SHOW_SPREAD)), "show_blur": float(rng.uniform(*SHOW_BLUR)),
            "show_flip": int(rng.integers(0, 2)),  # the sheet turned over side to side (0) or top to bottom (1)
            "noise": float(rng.uniform(*NOISE))}


def place(images: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """(n, 8, 8) images pasted onto blank canvases at their OFFSETS index: (n, CANVAS, CANVAS)."""
    canvas = np.zeros((len(images), CANVAS, CANVAS))
    for i, (dy, dx) in enumerate(np.asarray(OFFSETS)[offset]):
        canvas[i, dy:dy + 8, dx:dx + 8] = images[i]
    return canvas


def blurred(canvas: np.ndarray, sd: float) -> np.ndarray:
    """(n, CANVAS, CANVAS) canvases through a separable 3-tap Gaussian blur of sd `sd` (zero outside)."""
    kernel = np.exp(-0.5 * (np.arange(-1, 2) / max(sd, 1e-3)) ** 2)
    kernel /= kernel.sum()
    pad = np.pad(canvas, ((0, 0), (1, 1), (1, 1)))
    rows = sum(k * pad[:, i:i + CANVAS, :] for i, k in enumerate(kernel))
    return sum(k * rows[:, :, i:i + CANVAS] for i, k in enumerate(kernel))


def draw_effects(scanner: dict, n: int, backs: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """n images' own effects, drawn from the device's distribution: offset (an index into OFFSETS), stroke
    (an index into STROKES), tilt (degrees) and slant, gamma, the fold point (1: no fold) and depth, gain, and
    the light no digit explains (each (n, 81)): the illumination ramp, the stray pixels and `backs` ((n, 8, 8):
    what is on the other side of each sheet) showing through, turned over, blurred and dimmed."""
    offset = rng.choice(len(OFFSETS), n, p=scanner["offset_p"])
    stroke = rng.choice(len(STROKES), n, p=scanner["stroke_p"])
    tilt = scanner["tilt"] + rng.normal(0.0, scanner["tilt_spread"], n)
    slant = scanner["slant"] + rng.normal(0.0, scanner["slant_spread"], n)
    gamma = scanner["gamma"] * np.exp(rng.normal(0.0, scanner["gamma_spread"], n))
    if scanner["fold_at"] < 1.0:
        fold_at = np.clip(scanner["fold_at"] + rng.normal(0.0, scanner["fold_spread"], n), 0.2, 0.8)
    else:
        fold_at = np.ones(n)
    fold_depth = scanner["fold_depth"] * rng.uniform(0.8, 1.0, n)
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
    turned = backs[:, :, ::-1] if scanner["show_flip"] == 0 else backs[:, ::-1, :]
    shows = rng.random(n) < scanner["show_rate"]
    show = shows * scanner["show_strength"] * np.exp(rng.normal(0.0, scanner["show_spread"], n))
    back = blurred(place(turned, rng.choice(len(OFFSETS), n, p=scanner["offset_p"])), scanner["show_blur"])
    through = show[:, None] * back.reshape(n, -1)
    return {"offset": offset, "stroke": stroke, "tilt": tilt, "slant": slant, "gamma": gamma, "fold_at": fold_at,
            "fold_depth": fold_depth, "gain": gain, "light": ramp + stray + through}


def warped(canvas: np.ndarray, offset: np.ndarray, tilt: np.ndarray, slant: np.ndarray) -> np.ndarray:
    """(n, CANVAS, CANVAS) canvases with each digit rotated by its tilt (degrees) and sheared by its slant about
    the centre of its 8x8 square (bilinear; zero outside the canvas)."""
    n = len(canvas)
    centre = np.asarray(OFFSETS, dtype=np.float64)[offset] + 3.5  # (n, 2): row, column
    theta = np.deg2rad(tilt)
    cos, sin = np.cos(theta), np.sin(theta)
    rows, cols = np.meshgrid(np.arange(CANVAS, dtype=np.float64), np.arange(CANVAS, dtype=np.float64), indexing="ij")
    dr = rows[None] - centre[:, 0, None, None]
    dc = cols[None] - centre[:, 1, None, None]
    # the inverse map: undo the rotation, then the shear (a column shift growing with the row)
    ur = cos[:, None, None] * dr + sin[:, None, None] * dc
    uc = -sin[:, None, None] * dr + cos[:, None, None] * dc
    uc = uc - slant[:, None, None] * ur
    src_r, src_c = ur + centre[:, 0, None, None], uc + centre[:, 1, None, None]
    pad = np.pad(canvas, ((0, 0), (1, 2), (1, 2)))
    r = np.clip(src_r + 1, 0, CANVAS + 1.999)
    c = np.clip(src_c + 1, 0, CANVAS + 1.999)
    r0, c0 = np.floor(r).astype(np.int64), np.floor(c).astype(np.int64)
    fr, fc = r - r0, c - c0
    i = np.arange(n)[:, None, None]
    return ((1 - fr) * (1 - fc) * pad[i, r0, c0] + (1 - fr) * fc * pad[i, r0, c0 + 1]
            + fr * (1 - fc) * pad[i, r0 + 1, c0] + fr * fc * pad[i, r0 + 1, c0 + 1])


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


def response(ink: np.ndarray, gamma: np.ndarray, fold_at: np.ndarray, fold_depth: np.ndarray) -> np.ndarray:
    """A device's response to ink (n, d) in [0, 1] at each image's own contrast power and fold: rising to 1 at
    the fold point, then falling by fold_depth at full ink (fold_at 1: no fold)."""
    v = ink ** gamma[:, None]
    t, depth = fold_at[:, None], fold_depth[:, None]
    return np.where(v <= t, v / t, 1.0 - depth * (v - t) / np.maximum(1.0 - t, 1e-9))


def observe(images: np.ndarray, effects: dict) -> np.ndarray:
    """(n, 8, 8) digits through their own effects, before noise and clipping: (n, CANVAS * CANVAS)."""
    placed = warped(place(images, effects["offset"]), effects["offset"], effects["tilt"], effects["slant"])
    canvas = thicken(placed, effects["stroke"]).reshape(len(images), -1)
    drawn = response(canvas, effects["gamma"], effects["fold_at"], effects["fold_depth"])
    return drawn * effects["gain"][:, None] + effects["light"]


def render(images: np.ndarray, scanner: dict, effects: dict, rng: np.random.Generator) -> np.ndarray:
    """(n, 8, 8) digits in [0, 1] through one device with their own effects: (n, CANVAS * CANVAS) float32."""
    drawn = observe(images, effects)
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
    part_of = np.empty(len(y), dtype=np.int64)
    for p, rows in enumerate(parts.values()):
        part_of[rows] = p
    effects = {"offset": np.zeros(len(y), np.int64), "stroke": np.zeros(len(y), np.int64),
               "tilt": np.zeros(len(y)), "slant": np.zeros(len(y)), "gamma": np.ones(len(y)),
               "fold_at": np.ones(len(y)), "fold_depth": np.zeros(len(y)),
               "gain": np.ones(len(y)), "light": np.zeros((len(y), CANVAS * CANVAS))}
    for k, scanner in enumerate(scanners):
        rows = np.flatnonzero(device == k)
        backs = np.array([nuisance.choice(np.setdiff1d(np.flatnonzero(part_of == part_of[r]), [r])) for r in rows],
                         dtype=np.int64)  # the other side of each sheet: another digit of the same part
        drawn = draw_effects(scanner, len(rows), images[backs], nuisance)
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
