"""privacy's 1.0: the likelihood-ratio attack of an attacker who knows every other candidate's membership.

    python benchmarks/oracle_privacy.py [--shadows 128] [--conditioned 0.2 ...]

The attacker here knows everything about how a world was made except its coin flips: the target's
exact training recipe (baseline/target_model.py), the candidate pool, and the membership process
(prepare.py: exactly half of the candidates, within one of half of every class, trained on in id
order). The most powerful test of "candidate i is a member" given the target's output is then the
likelihood ratio between the target's output distribution when i is in the training set and when it
is not, over that process (Neyman-Pearson); online LiRA (Carlini et al. 2022, "Membership Inference
Attacks From First Principles", their strongest attack) estimates it per candidate: shadow models are
trained with the target's recipe on random draws of the membership process itself (so each
candidate is IN for half of the shadows and OUT for the other half), the logit-scaled confidence of
the true label, phi = log(p_y / (1 - p_y)), is fitted with one Gaussian over the IN shadows and one
over the OUT shadows, and the score is the log-likelihood ratio of the target's phi. Variants (the
Gaussians' variance per candidate or shared, as Carlini et al. do with few shadows; the offline,
OUT-only test the reference uses, for comparison) are picked on the validation world and the pick
is scored once on the hidden test world with the task's own evaluator. Numerics are pinned as the
driver pins them. 256 shadows per world: about four CPU-minutes.

A target's output on one candidate depends on who else it was trained with, so a test that knows the
target's real companions is stronger still: the oracle (`--conditioned RATE`) trains the shadows on the
world's true member set with RATE of each class's members swapped for as many non-members, so each
candidate is IN or OUT among the target's actual training set, and scores the same per-candidate
likelihood ratio. No attacker has the companions, but one can estimate them: a strong LLM agent's
attack re-estimated the member set from a first LiRA round and trained context-conditioned shadows
around it (test 0.903, beyond online LiRA's 0.78), which is why the conditioned test, not online LiRA,
is the 1.0. Default run, 128 shadows per world and variant (about 8 CPU-minutes): online LiRA val 0.747
/ test 0.773, the conditioned oracle at 0.2 swapped val 0.947 / test 0.957 (picked on val: the 1.0).

Measured before (val / test TPR at 10% FPR, per-candidate variances, picked on val over the shared-variance and
offline variants every time): 16 shadows 0.680 / 0.703 (shared variance, picked: 0.697 / 0.727), 128
0.747 / 0.770, 256 0.767 / 0.780 (the 1.0), 512 0.767 / 0.773: the estimate has converged. Offline
LiRA with the same shadows scores 0.687 / 0.703 at 256, the reference's offline LiRA on the auxiliary
pool 0.36-0.39 / 0.43-0.47.
"""

from __future__ import annotations

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


def logit_confidence(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    """log(p_y / (1 - p_y)): the true logit minus the log-sum-exp of the others."""
    rows = np.arange(len(y))
    others = logits.copy()
    others[rows, y] = -np.inf
    top = others.max(axis=1, keepdims=True)
    return logits[rows, y] - (top[:, 0] + np.log(np.exp(others - top).sum(axis=1)))


def membership_draw(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """prepare.membership: exactly half, within one of half of every class."""
    order = np.lexsort((rng.random(len(y)), y))
    member = np.zeros(len(y), dtype=bool)
    member[order[::2]] = True
    return member


def swapped(member: np.ndarray, y: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    """`member` with a `rate` share of each class's members exchanged for as many of its non-members."""
    out = member.copy()
    for c in np.unique(y):
        ins, outs = np.flatnonzero(member & (y == c)), np.flatnonzero(~member & (y == c))
        k = int(round(rate * min(len(ins), len(outs))))
        out[rng.choice(ins, k, replace=False)] = False
        out[rng.choice(outs, k, replace=False)] = True
    return out


def shadows(x: np.ndarray, y: np.ndarray, n: int, rng: np.random.Generator,
            truth: np.ndarray | None = None, rate: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(IN masks, phi) of n shadow models, each (n, candidates); candidates are in id order, as the target's rows.

    Without `truth` each shadow's members are a fresh draw of the membership process; with it, the true
    member set with a `rate` share swapped, so every candidate is judged among the target's real companions."""
    masks, phis = [], []
    for _ in range(n):
        member = membership_draw(y, rng) if truth is None else swapped(truth, y, rate, rng)
        weights = target_model.train(x[member], y[member], random_state=int(rng.integers(2**31)))
        masks.append(member)
        phis.append(logit_confidence(target_model.logits(weights, x), y))
    return np.array(masks), np.array(phis)


def gaussian_logpdf(v: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    return -0.5 * ((v - mean) / sd) ** 2 - np.log(sd)


def lira(phi_target: np.ndarray, masks: np.ndarray, phis: np.ndarray, variant: str) -> np.ndarray:
    n_in = masks.sum(axis=0)
    n_out = (~masks).sum(axis=0)
    mean_in = np.where(masks, phis, 0).sum(axis=0) / n_in
    mean_out = np.where(~masks, phis, 0).sum(axis=0) / n_out
    var_in = np.where(masks, (phis - mean_in) ** 2, 0).sum(axis=0) / np.maximum(n_in - 1, 1)
    var_out = np.where(~masks, (phis - mean_out) ** 2, 0).sum(axis=0) / np.maximum(n_out - 1, 1)
    if variant == "global":
        var_in, var_out = np.full_like(var_in, np.median(var_in)), np.full_like(var_out, np.median(var_out))
    sd_in, sd_out = np.sqrt(np.maximum(var_in, 1e-6)), np.sqrt(np.maximum(var_out, 1e-6))
    if variant == "offline":
        return (phi_target - mean_out) / sd_out
    return gaussian_logpdf(phi_target, mean_in, sd_in) - gaussian_logpdf(phi_target, mean_out, sd_out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shadows", type=int, default=128, help="shadow models per world")
    parser.add_argument("--conditioned", type=float, nargs="*", default=[0.2], metavar="RATE",
                        help="also the oracle that knows every other candidate's membership: shadows on the true "
                             "member set with this share swapped (e.g. 0.1 0.25)")
    args = parser.parse_args(argv)
    task = prepared("privacy")
    rng = np.random.default_rng(SEED)
    worlds = {"val": task.public_dir, "test": task.test_inputs_dir}
    fitted = {}
    for phase, folder in worlds.items():
        cand = np.load(folder / "candidates.npz")
        target = dict(np.load(folder / "target_model.npz"))
        masks, phis = shadows(cand["x"], cand["y"], args.shadows, rng)
        phi = logit_confidence(target_model.logits(target, cand["x"]), cand["y"])
        fitted[phase] = (cand["id"], phi, masks, phis)
        if args.conditioned:
            labels = pd.read_csv(task.labels_dir / f"{phase}_membership.csv").set_index("id").loc[cand["id"]]
            truth = labels["member"].to_numpy() == 1
            for rate in args.conditioned:
                fitted[phase, rate] = (cand["id"], phi, *shadows(cand["x"], cand["y"], args.shadows, rng, truth, rate))
    picker = BestOnVal(task)
    variants = [(v, None) for v in ("per-candidate", "global", "offline")] + [("per-candidate", r) for r in args.conditioned]
    for variant, rate in variants:
        scores = {}
        for phase in worlds:
            ids, phi, masks, phis = fitted[phase if rate is None else (phase, rate)]
            frame = pd.DataFrame({"id": ids, "score": lira(phi, masks, phis, variant)})
            scores[phase] = evaluate(task, phase, lambda out, f=frame: f.to_csv(out / "scores.csv", index=False))
        name = (f"LiRA ({variant} variance, {args.shadows} shadows)" if variant != "offline"
                else f"offline LiRA (OUT shadows only, {args.shadows} shadows)")
        if rate is not None:
            name = f"LiRA among the true companions ({rate:g} swapped, {args.shadows} shadows)"
        picker.add(name, scores)
    picker.conclude()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
