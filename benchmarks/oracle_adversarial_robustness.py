"""adversarial_robustness's 1.0: the strongest adversarial training of the family at the task's radius.

    python benchmarks/oracle_adversarial_robustness.py [--configs NAME ...] [--finalists 2]

The evaluator's threat model is fixed (L-inf radius 0.15 on 8x8 digits in [0, 1], a reduced AutoAttack)
and so is the model family (a ReLU MLP, at most 4 hidden layers of 512). The data themselves allow
robust accuracy 1.0: no two of the 1,797 digits of different classes lie within 2 x 0.15 of each other
in L-inf (the closest pair is 0.44 apart), so the robust Bayes classifier is not a bound any estimator
from 1,078 training images comes near. The scale's 1.0 is therefore the best adversarial training one
can mount: the defences that top the robustness benchmarks for this threat model (PGD adversarial
training, Madry et al. 2018; TRADES, Zhang et al. 2019), at the family's largest widths, longer
schedules, the training radius ramped up, a one-cycle learning-rate schedule and an exponential moving
average of the weights (Rebuffi et al. 2021: the tricks that matter against robust overfitting). Each
configuration trains on the public training set only (as an agent's run does, within the task's
300-second step; seed 0) and is screened on validation by a cheap attack (PGD with cross-entropy and
with the margin loss, 20 steps each); the finalists are attacked by the task's own evaluator on
validation, and the best of them is scored once on the hidden test set. Torch runs on one thread.
`--configs all` runs the whole screen (about 25 CPU-minutes, most of it the evaluator's attacks on
robust networks); the default trains and scores only the configuration it chose (3.5 CPU-minutes on a
quiet machine, up to 8 on a loaded one).

Measured (seed 0; PGD-screened val robust accuracy, then the evaluator's val and test where attacked):
reference TRADES 256x2, 40 epochs 0.666 (evaluator 0.660 / 0.667); TRADES 512x2, 100 epochs 0.763;
512x3, 100 epochs, train eps 0.17 0.783; 512x3, 150 epochs 0.797; 512x4, 150 epochs 0.816 (0.7967 /
0.7972, the 1.0); 512x4, 250 epochs 0.827 (0.7855 / 0.7917); PGD-AT 512x3, 100 epochs 0.799 (0.7855 / -);
PGD-AT 512x4, 200 epochs 0.774 (0.7549 / -). Larger networks and longer schedules help up to the family's
4 x 512 and 150 epochs; 250 epochs overfit the screen's attack, not the evaluator's.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from oracle_common import conclude, evaluate, prepared, report
from task_runtime.digits import scaled_pixels

TASK_DIR = Path(__file__).resolve().parents[1] / "ml_tasks" / "adversarial_robustness"
EPS = 0.15


def config(method: str, width: int, depth: int, epochs: int, train_eps: float = EPS, beta: float = 6.0,
           ema: float = 0.995, one_cycle: bool = True) -> dict:
    return dict(method=method, width=width, depth=depth, epochs=epochs, lr=1e-3, batch=32, train_eps=train_eps,
                steps=10, beta=beta, ema=ema, one_cycle=one_cycle)


# name -> settings; every one trains on the 1,078 public training images.
CONFIGS = {
    "reference TRADES (256x2, 40 epochs)": config("trades", 256, 2, 40, ema=0.0, one_cycle=False),
    "TRADES 512x2, 100 epochs": config("trades", 512, 2, 100),
    "TRADES 512x3, 100 epochs, train eps 0.17": config("trades", 512, 3, 100, train_eps=0.17),
    "TRADES 512x3, 150 epochs, train eps 0.17": config("trades", 512, 3, 150, train_eps=0.17),
    "TRADES 512x4, 150 epochs, train eps 0.17": config("trades", 512, 4, 150, train_eps=0.17),
    "PGD-AT 512x3, 100 epochs, train eps 0.17": config("pgd", 512, 3, 100, train_eps=0.17),
    "TRADES 512x4, 250 epochs, train eps 0.17": config("trades", 512, 4, 250, train_eps=0.17),
    "PGD-AT 512x4, 200 epochs, train eps 0.17": config("pgd", 512, 4, 200, train_eps=0.17),
}

# What `--configs all` (every configuration above, about 25 CPU-minutes) picks: the screen's top two are
# the 512x4 TRADES runs (PGD-screened val 0.8273 at 250 epochs, 0.8162 at 150), and the evaluator's val
# prefers 150 epochs (0.7967 against 0.7855). The default run trains only this one.
CHOSEN = "TRADES 512x4, 150 epochs, train eps 0.17"


def pgd(net, x, y, eps: float, steps: int, loss: str = "ce"):
    """L-inf PGD from a random start, on the cross-entropy or on the margin (best other logit minus true)."""
    import torch
    from torch.nn import functional as F

    x_adv = (x + torch.empty_like(x).uniform_(-eps, eps)).clamp(0, 1)
    for _ in range(steps):
        x_adv.requires_grad_(True)
        logits = net(x_adv)
        if loss == "ce":
            objective = F.cross_entropy(logits, y)
        else:
            true = logits.gather(1, y[:, None])[:, 0]
            objective = (logits.scatter(1, y[:, None], -1e9).max(1).values - true).sum()
        (grad,) = torch.autograd.grad(objective, x_adv)
        x_adv = x_adv.detach() + 2.5 * eps / steps * grad.sign()
        x_adv = torch.min(torch.max(x_adv, x - eps), x + eps).clamp(0, 1)
    return x_adv.detach()


def screen(net, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(clean accuracy, robust accuracy under PGD-CE then PGD-margin, 20 steps each): the cheap proxy."""
    import torch

    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    torch.manual_seed(0)
    with torch.no_grad():
        alive = net(xs).argmax(1) == ys
    clean = float(alive.float().mean())
    for loss in ("ce", "margin"):
        x_adv = pgd(net, xs, ys, EPS, 20, loss)
        with torch.no_grad():
            alive &= net(x_adv).argmax(1) == ys
    return clean, float(alive.float().mean())


def train(x: np.ndarray, y: np.ndarray, c: dict, seed: int = 0):
    import torch
    from torch.nn import functional as F

    from family import RobustMLP
    from model import kl_attack  # the reference's TRADES inner maximisation (reference/model.py)

    torch.manual_seed(seed)
    net = RobustMLP([c["width"]] * c["depth"])
    average = copy.deepcopy(net) if c["ema"] else net
    opt = torch.optim.Adam(net.parameters(), lr=c["lr"])
    xs, ys = torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
    n_batches = -(-len(xs) // c["batch"])
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=c["lr"], total_steps=c["epochs"] * n_batches,
                                                   pct_start=0.3) if c["one_cycle"] else None
    for epoch in range(c["epochs"]):
        eps = c["train_eps"] * min(1.0, (epoch + 1) / max(1.0, c["epochs"] / 3))
        order = torch.randperm(len(xs))
        for start in range(0, len(xs), c["batch"]):
            idx = order[start:start + c["batch"]]
            xb, yb = xs[idx], ys[idx]
            if c["method"] == "trades":
                x_adv = kl_attack(net, xb, eps, c["steps"])
                logits = net(xb)
                robust = F.kl_div(F.log_softmax(net(x_adv), dim=1), F.softmax(logits, dim=1), reduction="batchmean")
                loss = F.cross_entropy(logits, yb) + c["beta"] * robust
            else:
                loss = F.cross_entropy(net(pgd(net, xb, yb, eps, c["steps"])), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if schedule is not None:
                schedule.step()
            if c["ema"]:
                with torch.no_grad():
                    for a, p in zip(average.parameters(), net.parameters()):
                        a.mul_(c["ema"]).add_(p, alpha=1 - c["ema"])
    return average.eval()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=[CHOSEN], choices=[*CONFIGS, "all"],
                        help=f"configurations to train (default: the one the screening chose, {CHOSEN!r})")
    parser.add_argument("--finalists", type=int, default=2, help="configurations the evaluator attacks on val")
    args = parser.parse_args(argv)
    if "all" in args.configs:
        args.configs = list(CONFIGS)
    import torch

    torch.set_num_threads(1)
    sys.path[:0] = [str(TASK_DIR / "reference"), str(TASK_DIR / "baseline")]
    import family
    from safetensors.numpy import save_file

    task = prepared("adversarial_robustness")
    frame = pd.read_csv(task.public_dir / "train.csv")
    x, y = scaled_pixels(frame), frame["label"].to_numpy(dtype=np.int64)
    val = pd.read_csv(task.labels_dir / "val.csv")
    x_val, y_val = scaled_pixels(val), val["label"].to_numpy(dtype=np.int64)
    screened = []
    for name in args.configs:
        started = time.process_time()
        net = train(x, y, CONFIGS[name])
        clean, robust = screen(net, x_val, y_val)
        print(f"{name}: trained in {time.process_time() - started:.0f} CPU-s; val clean {clean:.4f}, "
              f"PGD-screened robust {robust:.4f}", flush=True)
        screened.append((robust if clean >= 0.9 else 0.0, name, net))
    finalists = sorted(screened, key=lambda s: -s[0])[:args.finalists]
    metric = task.spec.metric.name
    best = None
    for _, name, net in finalists:
        def write(out, net=net):
            save_file(family.to_tensors(net), str(out / "model.safetensors"), metadata={"hidden": json.dumps(net.hidden)})
        scores = evaluate(task, "val", write)
        print(f"{name}: the evaluator's val {metric}={scores[metric]:.4f} (clean {scores['clean_accuracy']:.4f})",
              flush=True)
        if best is None or scores[metric] > best[1][metric]:
            best = (name, scores, write)
    name, val_scores, write = best
    test_scores = evaluate(task, "test", write)
    report(task, name, val_scores, test_scores)
    conclude(task, name, val_scores, test_scores)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
