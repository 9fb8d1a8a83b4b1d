"""Write the domain_generalization task's data: Colored-MNIST (Arjovsky et al., 2019) on sklearn's digits.

Run by `researchbench.benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/domain_generalization> [--scale lite|gpu]

Construction, per image (all draws from fixed seeds, so two runs write the same bytes):
  - the target is the digit's group: 0 for digits 0-4, 1 for digits 5-9;
  - the observed label is the target flipped with probability LABEL_NOISE (so shape alone explains
    at most 75% of the observed labels);
  - the 8x8 digit (0..16) is pasted at a random offset (0..2 each way) on a blank 10x10 canvas: the
    position is a nuisance that carries no information;
  - two spurious features, each equal to the observed label flipped at its own, per-environment rate:
    a colour (0 or 1: the canvas is drawn in the colour's channel, 100 values, the other channel all
    zero) and a brightness (1: the strokes at full intensity; 0: dimmed to DIM of it, rounded);
  - the 200 values are stored in a fixed, undisclosed column order (x0..x199).
Training environments: (colour, brightness) flip rates (0.1, 0.3) and (0.25, 0.15), so each spurious
feature predicts the observed label about as well as shape does or better, by different amounts in
the two environments. Validation and hidden test each have two environments built from the same
digits (fresh offsets and features): "aligned" (both flip rates 0.1) and "flipped" (both 0.9: the
correlations are reversed). The score is the worse of the two environments' accuracies against the
target (the digit's true group), so following either spurious feature fails on "flipped" and
inverting it fails on "aligned".

    public/train.csv              id, env (0/1), x0..x199, label (observed, noisy)
    public/val_inputs.csv         id, x0..x199          both validation environments, shuffled
    test_inputs/test_inputs.csv   id, x0..x199          both hidden test environments, shuffled
    labels/val.csv, labels/test.csv   id, env (aligned|flipped), target   evaluator only

Scale (SCALES): at "lite" (the default; the domain_generalization task) every training digit is drawn
once and every evaluation digit once per environment. At "gpu" (the domain_generalization_gpu task) the
same digits, split the same way, are each drawn TRAIN_DRAWS times into their training environment and
EVAL_DRAWS times into each evaluation environment, every draw with its own offset, label noise, colour and
brightness: more images, not more digits (sklearn's digits are all the generator has).

Version 3.0.0 added the canvas offsets and the brightness feature (version 2: one colour, the bare
8x8 image, 128 columns).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime.datasets import prepare_main, stratified_split, write_tables
from task_runtime.digits import digit_pixels

SEED = 20270301  # fixed: changing it changes the task (bump the version)
LABEL_NOISE = 0.25
CANVAS = 10  # the digit sits at a random offset 0..CANVAS-8 each way
PIXELS = CANVAS * CANVAS  # values per channel
DIM = 0.55  # a dim image's strokes, as a fraction of full intensity
TRAIN_FLIPS = ((0.1, 0.3), (0.25, 0.15))  # per training environment: (colour, brightness) flip rates
EVAL_FLIPS = {"aligned": (0.1, 0.1), "flipped": (0.9, 0.9)}
FRACTIONS = (0.5, 0.25, 0.25)  # train / val / test images, stratified by digit
FEATURES = [f"x{i}" for i in range(2 * PIXELS)]
# Draws per digit: into its training environment, and into each evaluation environment. "lite" is the
# task as it has always been (one draw each: its files do not change); "gpu" is the domain_generalization_gpu
# variant's scale.
SCALES = {"lite": {"train_draws": 1, "eval_draws": 1},
          "gpu": {"train_draws": 50, "eval_draws": 10}}


def canvas(images: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Each 8x8 image pasted at a random offset on a blank canvas: (n, PIXELS) values, (n, 2) offsets."""
    offsets = rng.integers(0, CANVAS - 8 + 1, size=(len(images), 2))
    out = np.zeros((len(images), CANVAS, CANVAS), dtype=np.int64)
    squares = images.reshape(len(images), 8, 8)
    for dy in range(CANVAS - 8 + 1):  # one paste per offset, not per image (gpu scale has ~50,000 images)
        for dx in range(CANVAS - 8 + 1):
            rows = (offsets[:, 0] == dy) & (offsets[:, 1] == dx)
            out[rows, dy:dy + 8, dx:dx + 8] = squares[rows]
    return out.reshape(len(images), PIXELS), offsets


def spurious(images: np.ndarray, target: np.ndarray, flips: tuple[float, float],
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(2 * PIXELS features in channel order, observed label, the hidden draws) for one environment."""
    colour_flip, bright_flip = flips
    observed = target ^ (rng.random(len(target)) < LABEL_NOISE)
    colour = observed ^ (rng.random(len(target)) < colour_flip)
    bright = observed ^ (rng.random(len(target)) < bright_flip)
    drawn, offsets = canvas(images, rng)
    drawn = np.where(bright[:, None] == 1, drawn, np.rint(drawn * DIM)).astype(np.int64)
    features = np.zeros((len(images), 2 * PIXELS), dtype=np.int64)
    features[colour == 0, :PIXELS] = drawn[colour == 0]
    features[colour == 1, PIXELS:] = drawn[colour == 1]
    return features, observed.astype(np.int64), {"colour": colour, "bright": bright, "offsets": offsets}


# the draws no file shows (for the oracle); `source` is the row's digit in sklearn's digits (at gpu scale
# several rows share one)
HIDDEN = ["digit", "source", "colour", "bright", "offset_y", "offset_x"]


def generate(scale: str = "lite") -> tuple[dict[str, pd.DataFrame], np.ndarray]:
    """Every row of every phase with its id, environment, features, label or target and the HIDDEN draws;
    and the column order. `build` writes what the files show; benchmarks/oracle_domain_generalization.py
    replays this to know what no estimator is told."""
    draws = SCALES[scale]
    images, digit = digit_pixels()
    target = (digit >= 5).astype(np.int64)
    rng = np.random.default_rng(SEED)
    order = rng.permutation(2 * PIXELS)  # the undisclosed column order
    split = stratified_split(digit, FRACTIONS, rng)

    def frame(idx: np.ndarray, env, flips: tuple[float, float]) -> tuple[pd.DataFrame, np.ndarray]:
        features, observed, hidden = spurious(images[idx], target[idx], flips, rng)
        out = pd.DataFrame(features[:, order], columns=FEATURES)
        out.insert(0, "env", env)
        out = out.assign(digit=digit[idx], source=idx, colour=hidden["colour"], bright=hidden["bright"],
                         offset_y=hidden["offsets"][:, 0], offset_x=hidden["offsets"][:, 1])
        return out, observed

    rows: dict[str, list[pd.DataFrame]] = {"train": [], "val": [], "test": []}
    train_envs = np.array_split(split["train"], len(TRAIN_FLIPS))
    for env, (idx, flips) in enumerate(zip(train_envs, TRAIN_FLIPS)):
        part, observed = frame(np.tile(idx, draws["train_draws"]), env, flips)
        rows["train"].append(part.assign(label=observed))
    for phase in ("val", "test"):
        idx = np.tile(split[phase], draws["eval_draws"])
        for env, flips in EVAL_FLIPS.items():
            part, _ = frame(idx, env, flips)
            rows[phase].append(part.assign(target=target[idx]))

    total = sum(len(f) for frames in rows.values() for f in frames)
    ids = rng.permutation(total)
    start, tables = 0, {}
    for phase, frames in rows.items():
        table = pd.concat(frames, ignore_index=True)
        table.insert(0, "id", ids[start:start + len(table)])
        start += len(table)
        tables[phase] = table
    return tables, order


def build(out: Path, scale: str = "lite") -> None:
    tables, _ = generate(scale)
    write_tables(out, {"public/train.csv": tables["train"][["id", "env"] + FEATURES + ["label"]]})
    for phase in ("val", "test"):
        frame = tables[phase]
        inputs = "public/val_inputs.csv" if phase == "val" else "test_inputs/test_inputs.csv"
        write_tables(out, {inputs: frame[["id"] + FEATURES], f"labels/{phase}.csv": frame[["id", "env", "target"]]})


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv, scales=SCALES)


if __name__ == "__main__":
    sys.exit(main())
