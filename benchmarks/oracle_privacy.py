"""privacy's 1.0: the likelihood-ratio attack of an attacker who knows each world's hidden draw.

    python benchmarks/oracle_privacy.py [--shadows 128] [--conditioned 0.2 ...]

Since version 4.0.0 each world is a hidden draw (ml_tasks/privacy/prepare.py, `draw_worlds`): the
target's training recipe (epochs, learning rate, batch size, weight penalty, per-epoch perturbations of
the training images), the private images it trained on besides its member candidates, and the
membership process (a hidden share, a rate per class). This oracle knows all of it but the coin flips.
The most powerful test of "candidate i is a member" given the target's output is then the likelihood
ratio between the target's output distribution when i is in the training set and when it is not
(Neyman-Pearson), which LiRA (Carlini et al. 2022, "Membership Inference Attacks From First
Principles") estimates per candidate: shadow models trained with the world's own recipe
(`prepare.train_hidden`), the logit-scaled confidence of the true label, phi = log(p_y / (1 - p_y)),
fitted with one Gaussian over the shadows that held the candidate (IN) and one over those that did not
(OUT), the score the log-likelihood ratio of the target's phi.

Two kinds of shadows: online LiRA over the world's membership process (each shadow trains on a fresh
draw of the members plus the world's private images), and LiRA among the true companions
(`--conditioned RATE`): the world's true training set with RATE of each class's member candidates
swapped for as many non-members, so every candidate is IN or OUT among the target's real companions
(the strongest: the 1.0 since version 3.0.0, where an agent's attack estimated the companions). Each
with per-candidate or shared (median) variances; the variant is picked on the validation world and
scored once on the hidden test world with the task's own evaluator. Numerics are pinned as the driver
pins them. Default run: 128 shadows per world and kind, about 7 CPU-minutes: val 0.806, test 0.486
(the companions, per-candidate variances: the 1.0); online LiRA with the world's recipe val 0.54, test 0.46.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

TASK_DIR = Path(__file__).resolve().parents[1] / "ml_tasks" / "privacy"
sys.path.insert(0, str(TASK_DIR / "baseline"))
import numerics  # noqa: E402

numerics.pin()

import argparse  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import target_model  # noqa: E402
from oracle_common import BestOnVal, evaluate, prepared  # noqa: E402

SEED = 0


def load_prepare():
    """The task's prepare.py (the generator and its hidden draws), imported under its own name."""
    spec = importlib.util.spec_from_file_location("privacy_prepare", TASK_DIR / "prepare.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def logit_confidence(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    """log(p_y / (1 - p_y)): the true logit minus the log-sum-exp of the others."""
    rows = np.arange(len(y))
    others = logits.copy()
    others[rows, y] = -np.inf
    top = others.max(axis=1, keepdims=True)
    return logits[rows, y] - (top[:, 0] + np.log(np.exp(others - top).sum(axis=1)))


def swapped(member: np.ndarray, y: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    """`member` with a `rate` share of each class's members exchanged for as many of its non-members."""
    out = member.copy()
    for c in np.unique(y):
        ins, outs = np.flatnonzero(member & (y == c)), np.flatnonzero(~member & (y == c))
        k = int(round(rate * min(len(ins), len(outs))))
        out[rng.choice(ins, k, replace=False)] = False
        out[rng.choice(outs, k, replace=False)] = True
    return out


def shadows(prepare, x: np.ndarray, y: np.ndarray, world, n: int, rng: np.random.Generator,
            rate: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(IN masks, phi) of n shadow models trained with the world's recipe, each (n, candidates).

    Without `rate` each shadow's member candidates are a fresh draw of the membership process; with it,
    the true members with a `rate` share swapped. Either way the world's private images are in every one."""
    cx, cy = x[world.rows], y[world.rows]
    masks, phis = [], []
    for _ in range(n):
        member = prepare.membership(cy, rng) if rate is None else swapped(world.member, cy, rate, rng)
        rows = np.concatenate([world.rows[member], world.private])
        weights = prepare.train_hidden(x[rows], y[rows], world.recipe, int(rng.integers(2**31)))
        masks.append(member)
        phis.append(logit_confidence(target_model.logits(weights, cx), cy))
    return np.array(masks), np.array(phis)


def gaussian_logpdf(v: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    return -0.5 * ((v - mean) / sd) ** 2 - np.log(sd)


def lira(phi_target: np.ndarray, masks: np.ndarray, phis: np.ndarray, variance: str) -> np.ndarray:
    n_in, n_out = masks.sum(axis=0), (~masks).sum(axis=0)
    mean_in = np.where(masks, phis, 0).sum(axis=0) / np.maximum(n_in, 1)
    mean_out = np.where(~masks, phis, 0).sum(axis=0) / np.maximum(n_out, 1)
    var_in = np.where(masks, (phis - mean_in) ** 2, 0).sum(axis=0) / np.maximum(n_in - 1, 1)
    var_out = np.where(~masks, (phis - mean_out) ** 2, 0).sum(axis=0) / np.maximum(n_out - 1, 1)
    if variance == "shared":
        var_in, var_out = np.full_like(var_in, np.median(var_in)), np.full_like(var_out, np.median(var_out))
    sd_in, sd_out = np.sqrt(np.maximum(var_in, 1e-6)), np.sqrt(np.maximum(var_out, 1e-6))
    return gaussian_logpdf(phi_target, mean_in, sd_in) - gaussian_logpdf(phi_target, mean_out, sd_out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shadows", type=int, default=128, help="shadow models per world and kind")
    parser.add_argument("--conditioned", type=float, nargs="*", default=[0.2], metavar="RATE",
                        help="also LiRA among the true companions: this share of the members swapped (e.g. 0.1 0.25)")
    args = parser.parse_args(argv)
    task = prepared("privacy")
    prepare = load_prepare()
    x, y, _, worlds = prepare.draw_worlds()
    rng = np.random.default_rng(SEED)
    folders = {"val": task.public_dir, "test": task.test_inputs_dir}
    kinds = [None, *args.conditioned]
    fitted = {}
    for phase, folder in folders.items():
        world = worlds[phase]
        cand = np.load(folder / "candidates.npz")
        if not np.array_equal(cand["id"], world.ids):
            raise SystemExit("the prepared workspace is not this prepare.py's draw: re-run `python setup.py privacy`")
        target = dict(np.load(folder / "target_model.npz"))
        phi = logit_confidence(target_model.logits(target, cand["x"]), cand["y"])
        for rate in kinds:
            fitted[phase, rate] = (world.ids, phi, *shadows(prepare, x, y, world, args.shadows, rng, rate))
    picker = BestOnVal(task)
    for rate in kinds:
        for variance in ("per-candidate", "shared"):
            scores = {}
            for phase in folders:
                ids, phi, masks, phis = fitted[phase, rate]
                frame = pd.DataFrame({"id": ids, "score": lira(phi, masks, phis, variance)})
                scores[phase] = evaluate(task, phase, lambda out, f=frame: f.to_csv(out / "scores.csv", index=False))
            kind = ("online LiRA over the membership process" if rate is None
                    else f"LiRA among the true companions ({rate:g} swapped)")
            picker.add(f"{kind}, the world's recipe, {variance} variance, {args.shadows} shadows", scores)
    picker.conclude()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
