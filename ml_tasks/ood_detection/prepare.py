"""Write the ood_detection task's data: 8x8 glyphs of five classes drawn by the task's own stroke renderer in
distribution; glyphs of unseen classes and structurally altered glyphs of the five classes out of distribution,
in hidden proportions that differ between validation and the hidden test.

Run by `researchbench.benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/ood_detection> [--scale lite|gpu]

`--scale` picks the sizes in `SCALES` (default lite, the CPU task): gpu draws 50 times more training glyphs
and 5 times larger evaluation sets from the same generator and the same world (the classes, each phase's novel
classes), for the ood_detection_gpu variant.

Everything comes from fixed seeds and numpy, so two runs write the same bytes. Layout:

    public/train.csv              id, p0..p63, label    in-distribution training glyphs (classes 0-4)
    public/val_inputs.csv         id, p0..p63           validation glyphs, ID and OOD shuffled together
    test_inputs/test_inputs.csv   id, p0..p63           hidden test glyphs, same format
    labels/val.csv, labels/test.csv   id, ood (0/1), kind (id | novel | altered)   evaluator only

The generator (agents are told the kinds of OOD and nuisance, never this form or its parameters):

- Strokes: the 20 segments between neighbouring points of a 3x3 lattice (`ANCHORS`, horizontal,
  vertical and diagonal neighbours). A glyph is a set of segments.
- The world (the hidden per-draw structure, `draw_world`): each of the five classes has CORE segments
  (a connected set) that every glyph of the class draws, and OPTIONAL segments next to them, each drawn
  with its own probability (uniform on OPTIONAL_P, drawn once); validation and test each get N_NOVEL
  classes of their own, drawn from the same prior; every two classes' cores differ in MIN_APART segments.
- Out of distribution (`ood_sets`), four mechanisms: `novel` (a glyph of a novel class), and three
  alterations of a training class's glyph: `swap` (a core segment replaced by a neighbouring segment the
  class never draws), `drop` (a core segment left out), `add` (a neighbouring segment the class never
  draws added); an alteration that any training class could draw is excluded. Each phase mixes the four
  in its own proportions (Dirichlet(MIX_CONCENTRATION), drawn once per phase). The labels say only
  `novel` or `altered`.
- Rendering (`render`, `POSES`): every glyph, in distribution or not, is drawn in one of 150 poses, all
  equally likely (the lattice rotated about the centre by one of ANGLES, offset by -1..1 pixels in steps
  of 1/2 on each axis, one of two stroke widths); a pixel is the brightest stroke's Gaussian profile at
  its distance from the segment, times the glyph's brightness (uniform on BRIGHTNESS). Then independent
  Gaussian pixel noise of sd NOISE levels (the digits' 0..16 scale), kept to 2 decimals and not clipped.

Because every choice is finite, the probability of an image under the in-distribution generator and under
each phase's OOD mixture is an exact finite sum over segment sets and poses, with the brightness integrated in
closed form (`mean_bank`, `log_likelihood`): the likelihood ratio is the
Bayes-optimal detector at every threshold, and benchmarks/oracle_ood_detection.py measures it.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime.datasets import prepare_main, write_tables
from task_runtime.digits import PIXELS

SEED = 20261127  # fixed: changing it changes the task (bump the version)
SIZE = 8
ANCHORS = 1.25 + 2.25 * np.arange(3)  # lattice coordinates, pixels (pixel centres are 0..7)
LATTICE = [(i, j) for i in range(3) for j in range(3)]
SEGMENTS = [(a, b) for a, b in itertools.combinations(range(9), 2)
            if max(abs(LATTICE[a][0] - LATTICE[b][0]), abs(LATTICE[a][1] - LATTICE[b][1])) == 1]
N_CLASSES = 5
N_NOVEL = 2  # novel classes per evaluation phase
CORE, OPTIONAL = 5, 3  # segments per class
OPTIONAL_P = (0.2, 0.7)  # each optional segment's own probability of being drawn, uniform in this range
MIN_APART = 4  # any two classes' core sets differ in at least this many segments
OFFSETS = (-1.0, -0.5, 0.0, 0.5, 1.0)  # pixels, each axis
ANGLES = (-0.2, 0.0, 0.2)  # rotation about the image centre, radians
WIDTHS = (0.45, 0.7)  # sd of a stroke's Gaussian profile, pixels
POSES = [(dy, dx, a, w) for dy in OFFSETS for dx in OFFSETS for a in ANGLES for w in WIDTHS]
BRIGHTNESS = (8.0, 16.0)  # a glyph's peak level, uniform in this range
NOISE = 2.0  # sd of the pixel noise, levels
MECHANISMS = ("novel", "swap", "drop", "add")
MIX_CONCENTRATION = 4.0
# The only constants that differ between scales: training glyphs per class, and in-distribution and OOD images
# per evaluation phase. The world is drawn before anything they size, so every scale has the same classes.
SCALES = {"lite": {"train_per_class": 60, "eval": {"id": 500, "ood": 500}},
          "gpu": {"train_per_class": 3000, "eval": {"id": 2500, "ood": 2500}}}


def neighbours(segments) -> list[int]:
    """Segments not in `segments` that share a lattice point with one of them."""
    points = {p for s in segments for p in SEGMENTS[s]}
    return [t for t in range(len(SEGMENTS)) if t not in segments and points & set(SEGMENTS[t])]


def draw_class(rng: np.random.Generator) -> tuple:
    """A class: CORE connected segments (grown from a random one), OPTIONAL neighbouring ones and each optional
    segment's probability."""
    core = [int(rng.integers(len(SEGMENTS)))]
    while len(core) < CORE:
        core.append(int(rng.choice(neighbours(core))))
    optional = tuple(sorted(int(o) for o in rng.choice(neighbours(core), size=OPTIONAL, replace=False)))
    probs = tuple(float(p) for p in np.round(rng.uniform(*OPTIONAL_P, size=OPTIONAL), 3))
    return frozenset(core), optional, probs


def draw_world(rng: np.random.Generator) -> tuple[list, dict[str, list]]:
    """The five training classes and each evaluation phase's novel classes, all MIN_APART from each other."""
    drawn: list = []
    while len(drawn) < N_CLASSES + 2 * N_NOVEL:
        candidate = draw_class(rng)
        if all(len(candidate[0] ^ other[0]) >= MIN_APART for other in drawn):
            drawn.append(candidate)
    return drawn[:N_CLASSES], {"val": drawn[N_CLASSES:N_CLASSES + N_NOVEL], "test": drawn[N_CLASSES + N_NOVEL:]}


def variants(cls) -> list[tuple[frozenset, float]]:
    """Every glyph a class draws (its core plus a subset of its optional segments) and its probability."""
    core, optional, probs = cls
    out = []
    for present in itertools.product((False, True), repeat=len(optional)):
        p = float(np.prod([q if on else 1.0 - q for q, on in zip(probs, present)]))
        out.append((core | frozenset(o for o, on in zip(optional, present) if on), p))
    return out


def class_sets(classes) -> dict[frozenset, float]:
    """Segment set -> probability when a class is drawn uniformly from `classes` and then one of its glyphs."""
    out: dict[frozenset, float] = {}
    for cls in classes:
        for v, p in variants(cls):
            out[v] = out.get(v, 0.0) + p / len(classes)
    return out


def altered(classes, mechanism: str) -> dict[frozenset, float]:
    """Segment set -> probability of an altered glyph: a training class uniformly, one of its glyphs, then one
    alteration uniformly among the allowed ones (none that any training class draws)."""
    allowed = set(class_sets(classes))
    out: dict[frozenset, float] = {}
    for cls in classes:
        core, optional, _ = cls
        full = core | frozenset(optional)
        for v, p in variants(cls):
            if mechanism == "drop":
                mods = [v - {s} for s in sorted(core)]
            elif mechanism == "add":
                mods = [v | {t} for t in neighbours(v) if t not in full]
            else:  # swap
                mods = [(v - {s}) | {t} for s in sorted(core) for t in neighbours(v - {s}) if t not in full]
            mods = [m for m in mods if m not in allowed]
            for m in mods:
                out[m] = out.get(m, 0.0) + p / len(classes) / len(mods)
    return out


def ood_sets(classes, novel) -> dict[str, dict[frozenset, float]]:
    """Each OOD mechanism's distribution over segment sets."""
    return {"novel": class_sets(novel), **{m: altered(classes, m) for m in MECHANISMS[1:]}}


_STROKES: dict = {}


def strokes(pose) -> np.ndarray:
    """(20, 64): each segment's Gaussian profile at every pixel, peak 1, in one pose (dy, dx, angle, width):
    the lattice rotated about the image centre, then offset."""
    if pose not in _STROKES:
        dy, dx, angle, width = pose
        rows, cols = np.mgrid[0:SIZE, 0:SIZE].astype(np.float64)
        centre = (SIZE - 1) / 2.0
        cos, sin = np.cos(angle), np.sin(angle)

        def point(k: int) -> np.ndarray:
            r, c = ANCHORS[LATTICE[k][0]] - centre, ANCHORS[LATTICE[k][1]] - centre
            return np.array([centre + cos * r - sin * c + dy, centre + sin * r + cos * c + dx])

        maps = []
        for a, b in SEGMENTS:
            p = point(a)
            v = point(b) - p
            t = np.clip(((rows - p[0]) * v[0] + (cols - p[1]) * v[1]) / (v @ v), 0.0, 1.0)
            dist2 = (rows - p[0] - t * v[0]) ** 2 + (cols - p[1] - t * v[1]) ** 2
            maps.append(np.exp(-dist2 / (2.0 * width * width)).ravel())
        _STROKES[pose] = np.stack(maps)
    return _STROKES[pose]


def render(segments, pose) -> np.ndarray:
    """The noiseless image (64,) of a segment set in one pose at brightness 1: the brightest stroke per pixel."""
    return strokes(pose)[sorted(segments)].max(axis=0)


def sample(sets: dict[frozenset, float], n: int, rng: np.random.Generator) -> np.ndarray:
    """n noisy images from a distribution over segment sets; pose and brightness uniform."""
    keys = list(sets)
    p = np.array([sets[k] for k in keys])
    picks = rng.choice(len(keys), size=n, p=p / p.sum())
    poses = rng.integers(len(POSES), size=n)
    brightness = rng.uniform(*BRIGHTNESS, size=n)
    clean = np.stack([b * render(keys[i], POSES[j]) for i, j, b in zip(picks, poses, brightness)]) if n \
        else np.empty((0, SIZE * SIZE))
    return np.round(clean + rng.normal(0.0, NOISE, size=clean.shape), 2)


def mean_bank(sets: dict[frozenset, float]) -> tuple[np.ndarray, np.ndarray]:
    """Every noiseless image at brightness 1 the distribution draws, (k, 64), and its log-probability (k,)."""
    means = np.stack([render(s, pose) for s in sets for pose in POSES])
    logp = np.repeat(np.log(np.array(list(sets.values()))) - np.log(len(POSES)), len(POSES))
    return means, logp


def _log_interval(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """log(Phi(hi) - Phi(lo)) for lo < hi, accurate in both tails."""
    from scipy.special import log_ndtr

    upper = lo > 0  # both in the upper tail: use the mirrored interval
    a, b = np.where(upper, -hi, lo), np.where(upper, -lo, hi)
    la, lb = log_ndtr(a), log_ndtr(b)
    return lb + np.log1p(-np.exp(np.minimum(la - lb, 0.0)) + 1e-300)


def log_components(x: np.ndarray, means: np.ndarray) -> np.ndarray:
    """(n, k): log p(x_i | bank row j) when x = b m_j + N(0, NOISE^2 I) with the brightness b uniform on
    BRIGHTNESS. The integral over b is closed-form (a Gaussian in b cut to the interval); the 2-decimal
    rounding is ignored."""
    var = NOISE ** 2
    b0, b1 = BRIGHTNESS
    norm2 = (means ** 2).sum(axis=1)[None, :]
    dot = x @ means.T
    mu, tau = dot / norm2, np.sqrt(var / norm2)
    return (0.5 * np.log(2.0 * np.pi * var / norm2) + _log_interval((b0 - mu) / tau, (b1 - mu) / tau)
            - ((x ** 2).sum(axis=1)[:, None] - dot ** 2 / norm2) / (2.0 * var)
            - 0.5 * x.shape[1] * np.log(2.0 * np.pi * var) - np.log(b1 - b0))


def log_likelihood(x: np.ndarray, means: np.ndarray, logp: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """log p(x) of each row under the generator: bank row j drawn with probability exp(logp[j]), then
    `log_components`' brightness and noise."""
    out = np.full(len(x), -np.inf)
    for start in range(0, len(means), chunk):
        part = logp[start:start + chunk][None, :] + log_components(x, means[start:start + chunk])
        out = np.logaddexp(out, np.logaddexp.reduce(part, axis=1))
    return out


def generate(scale: str = "lite") -> dict:
    """Every draw, in a fixed order: the world, the training glyphs, each phase's mixture and glyphs, at the sizes
    of `SCALES[scale]`."""
    n_train, n_eval = SCALES[scale]["train_per_class"], SCALES[scale]["eval"]
    rng = np.random.default_rng(SEED)
    classes, novel = draw_world(rng)
    x_train = np.concatenate([sample(class_sets([c]), n_train, rng) for c in classes])
    y_train = np.repeat(np.arange(N_CLASSES), n_train)
    phases = {}
    for phase in ("val", "test"):
        mechanisms = ood_sets(classes, novel[phase])
        mix = rng.dirichlet(np.full(len(MECHANISMS), MIX_CONCENTRATION))
        counts = rng.multinomial(n_eval["ood"], mix)
        xs = [sample(class_sets(classes), n_eval["id"], rng)] + [sample(mechanisms[m], c, rng)
                                                                  for m, c in zip(MECHANISMS, counts)]
        kind = np.repeat(["id"] + ["novel" if m == "novel" else "altered" for m in MECHANISMS],
                         [n_eval["id"], *counts])
        mechanism = np.repeat(["id", *MECHANISMS], [n_eval["id"], *counts])
        phases[phase] = {"x": np.concatenate(xs), "kind": kind, "mechanism": mechanism, "mix": mix,
                         "mechanisms": mechanisms}
    total = len(x_train) + sum(len(p["x"]) for p in phases.values())
    ids = rng.permutation(total)
    return {"classes": classes, "novel": novel, "train": {"x": x_train, "y": y_train, "id": ids[:len(x_train)]},
            **{phase: {**p, "id": ids[len(x_train) + i * len(p["x"]):len(x_train) + (i + 1) * len(p["x"])]}
               for i, (phase, p) in enumerate(phases.items())}}


def build(out: Path, scale: str = "lite") -> None:
    draws = generate(scale)
    train = pd.DataFrame(draws["train"]["x"], columns=PIXELS)
    train.insert(0, "id", draws["train"]["id"])
    train["label"] = draws["train"]["y"]
    tables = {"public/train.csv": train}
    for phase, inputs in (("val", "public/val_inputs.csv"), ("test", "test_inputs/test_inputs.csv")):
        part = draws[phase]
        frame = pd.DataFrame(part["x"], columns=PIXELS)
        frame.insert(0, "id", part["id"])
        tables[inputs] = frame
        tables[f"labels/{phase}.csv"] = pd.DataFrame({"id": part["id"], "ood": (part["kind"] != "id").astype(int),
                                                      "kind": part["kind"]})
    write_tables(out, tables)


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv, scales=SCALES)


if __name__ == "__main__":
    sys.exit(main())
