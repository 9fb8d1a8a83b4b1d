"""Write the domain_generalization task's data: Colored-MNIST (Arjovsky et al., 2019) on sklearn's digits.

Run by `benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/domain_generalization>

Construction, per image (all draws from fixed seeds, so two runs write the same bytes):
  - the target is the digit's group: 0 for digits 0-4, 1 for digits 5-9;
  - the observed label is the target flipped with probability LABEL_NOISE (so shape alone explains
    at most 75% of the observed labels);
  - a colour (0 or 1) equals the observed label, flipped with the environment's COLOUR_FLIP rate;
  - the 8x8 image (0..16) is drawn in the colour's channel: 128 values, the other channel all zero.
    The 128 values are then stored in a fixed, undisclosed column order (x0..x127).
Training environments: colour flip 0.1 and 0.2, so colour predicts the observed label better (85%)
than shape does (75%). Validation and hidden test each have two environments built from the same
images: "aligned" (colour flip 0.1, like training) and "flipped" (colour flip 0.9: the correlation
is reversed). The score is the worse of the two environments' accuracies against the target (the
digit's true group), so following colour fails on "flipped" and inverting it fails on "aligned".

    public/train.csv              id, env (0/1), x0..x127, label (observed, noisy)
    public/val_inputs.csv         id, x0..x127          both validation environments, shuffled
    test_inputs/test_inputs.csv   id, x0..x127          both hidden test environments, shuffled
    labels/val.csv, labels/test.csv   id, env (aligned|flipped), target   evaluator only
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime.datasets import prepare_main, stratified_split, write_tables
from task_runtime.digits import digit_pixels

SEED = 20261126  # fixed: changing it changes the task (bump the version)
LABEL_NOISE = 0.25
TRAIN_COLOUR_FLIP = (0.1, 0.2)
EVAL_COLOUR_FLIP = {"aligned": 0.1, "flipped": 0.9}
FRACTIONS = (0.5, 0.25, 0.25)  # train / val / test images, stratified by digit
FEATURES = [f"x{i}" for i in range(128)]


def coloured(images: np.ndarray, target: np.ndarray, colour_flip: float,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(128 features in channel order, observed label) for one environment."""
    observed = target ^ (rng.random(len(target)) < LABEL_NOISE)
    colour = observed ^ (rng.random(len(target)) < colour_flip)
    features = np.zeros((len(images), 128), dtype=np.int64)
    features[colour == 0, :64] = images[colour == 0]
    features[colour == 1, 64:] = images[colour == 1]
    return features, observed.astype(np.int64)


def build(out: Path) -> None:
    images, digit = digit_pixels()
    target = (digit >= 5).astype(np.int64)
    rng = np.random.default_rng(SEED)
    order = rng.permutation(128)  # the undisclosed column order
    split = stratified_split(digit, FRACTIONS, rng)

    rows: dict[str, list[pd.DataFrame]] = {"train": [], "val": [], "test": []}
    train_envs = np.array_split(split["train"], len(TRAIN_COLOUR_FLIP))
    for env, (idx, flip) in enumerate(zip(train_envs, TRAIN_COLOUR_FLIP)):
        features, observed = coloured(images[idx], target[idx], flip, rng)
        frame = pd.DataFrame(features[:, order], columns=FEATURES)
        frame.insert(0, "env", env)
        frame["label"] = observed
        rows["train"].append(frame)
    for phase in ("val", "test"):
        idx = split[phase]
        for env, flip in EVAL_COLOUR_FLIP.items():
            features, _ = coloured(images[idx], target[idx], flip, rng)
            frame = pd.DataFrame(features[:, order], columns=FEATURES)
            frame.insert(0, "env", env)
            frame["target"] = target[idx]
            rows[phase].append(frame)

    total = sum(len(f) for frames in rows.values() for f in frames)
    ids = rng.permutation(total)
    start = 0
    for phase, frames in rows.items():
        frame = pd.concat(frames, ignore_index=True)
        frame.insert(0, "id", ids[start:start + len(frame)])
        start += len(frame)
        if phase == "train":
            write_tables(out, {"public/train.csv": frame})
        else:
            inputs = "public/val_inputs.csv" if phase == "val" else "test_inputs/test_inputs.csv"
            write_tables(out, {inputs: frame[["id"] + FEATURES], f"labels/{phase}.csv": frame[["id", "env", "target"]]})


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
