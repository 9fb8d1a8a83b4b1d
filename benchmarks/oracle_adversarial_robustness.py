"""adversarial_robustness's 1.0: adversarial training by a defender who knows the data's generator.

    python benchmarks/oracle_adversarial_robustness.py [--configs NAME ...] [--finalists 2]

Version 4's images are sklearn digits drawn through a generator (ml_tasks/adversarial_robustness/prepare.py):
each digit's box pasted at a random position of a 10 x 10 canvas, the 100 values in an undisclosed column
order. The training set holds one draw of each of 538 digits, a stratified half of version 3's 1,078-digit
training pool. The oracle knows the generator: it replays `generate` (the column order and the pool's
digits) and adversarially trains the family's largest MLP on a fresh draw of every one of the 1,078 pool
digits in every epoch, so the network sees each digit at many positions and never fits one draw. It sees no
validation or test digit. The recipes are the strongest of the family measured on version 3 (PGD
adversarial training, Madry et al. 2018, here half of the loss on the clean images; TRADES, Zhang et al.
2019; the training radius ramped up, an exponential moving average of the weights, Rebuffi et al. 2021).
Each configuration is trained with seed 0 and screened on validation by a cheap attack (PGD with
cross-entropy and with the margin loss, 20 steps each); the finalists are attacked by the task's own
evaluator on validation and test, and the best on validation is the 1.0. Torch runs on one thread. The
default trains and scores only the configuration the screen chose; `--configs all` reruns the screen.

Measured (seed 0), each on fresh draws of the pool for 300 epochs: TRADES 512x4 (beta 6, a 10-step KL
attack, radius ramped to 0.17): trained in 286 CPU-s (347 CPU-s with the evaluator's attacks, about 6
CPU-minutes; 24 minutes of wall time on the 2-core machine at a load of 6-10), val clean 0.955,
PGD-screened robust 0.599, the evaluator's val 0.5822, test 0.5889 (the 1.0); PGD-AT 512x4 (half the loss
clean, radius ramped to 0.2, 8 steps): 264 CPU-s, val clean 0.978, screened 0.557, the evaluator's val
0.4847, test 0.4806. For comparison (run
through the driver and the evaluator, seed 0): the same kind of training on the 538 public draws only
(version 3's strong-LLM solution: PGD-AT 512x4, 150 epochs, radius 0.2, a quarter of the loss clean) val
0.234 / test 0.2667; the reference (TRADES 256x2, 40 epochs) test 0.178.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from oracle_common import BestOnVal, evaluate, prepared
from researchbench.task_runtime.digits import PIXEL_MAX

TASK_DIR = Path(__file__).resolve().parents[1] / "ml_tasks" / "adversarial_robustness"
EPS = 0.15


def config(method: str, epochs: int, *, width: int = 512, depth: int = 4, fresh: bool = True,
           train_eps: float = 0.2, steps: int = 8, clean_weight: float = 0.5, beta: float = 6.0,
           ema: float = 0.995) -> dict:
    return dict(method=method, width=width, depth=depth, epochs=epochs, fresh=fresh, lr=1e-3, batch=64,
                train_eps=train_eps, steps=steps, clean_weight=clean_weight, beta=beta, ema=ema)


# name -> settings; every one trains on the 1,078 training digits only.
CONFIGS = {
    "PGD-AT 512x4, 300 epochs, fresh draws": config("pgd", 300),
    "TRADES 512x4, 300 epochs, fresh draws, train eps 0.17": config("trades", 300, train_eps=0.17, steps=10),
}
# What `--configs all` picks: the evaluator's val prefers TRADES (0.5822 against PGD-AT's 0.4847). The default
# run trains only this one.
CHOSEN = "TRADES 512x4, 300 epochs, fresh draws, train eps 0.17"


def generator():
    spec = importlib.util.spec_from_file_location("adversarial_robustness_prepare", TASK_DIR / "prepare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def kl_attack(net, x, eps: float, steps: int):
    """TRADES's inner maximisation: the L-inf PGD example that most changes the prediction on x."""
    import torch
    from torch.nn import functional as F

    target = F.softmax(net(x), dim=1).detach()
    x_adv = (x + 0.001 * torch.randn_like(x)).clamp(0, 1)
    for _ in range(steps):
        x_adv.requires_grad_(True)
        divergence = F.kl_div(F.log_softmax(net(x_adv), dim=1), target, reduction="sum")
        (grad,) = torch.autograd.grad(divergence, x_adv)
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


def train(data, c: dict, seed: int = 0):
    """`data(epoch)`: that epoch's (images, labels)."""
    import torch
    from torch.nn import functional as F

    from family import RobustMLP

    torch.manual_seed(seed)
    net = RobustMLP([c["width"]] * c["depth"])
    average = copy.deepcopy(net) if c["ema"] else net
    opt = torch.optim.Adam(net.parameters(), lr=c["lr"])
    total = c["epochs"] * math.ceil(len(data(0)[1]) / c["batch"])
    step = 0
    for epoch in range(c["epochs"]):
        xs, ys = (torch.from_numpy(a.copy()) for a in data(epoch))
        eps = c["train_eps"] * min(1.0, (epoch + 1) / max(1, int(0.3 * c["epochs"])))
        order = torch.randperm(len(xs))
        for start in range(0, len(xs), c["batch"]):
            for group in opt.param_groups:  # cosine decay
                group["lr"] = 0.5 * c["lr"] * (1 + math.cos(math.pi * step / total))
            step += 1
            idx = order[start:start + c["batch"]]
            xb, yb = xs[idx], ys[idx]
            if c["method"] == "trades":
                x_adv = kl_attack(net, xb, eps, c["steps"])
                logits = net(xb)
                robust = F.kl_div(F.log_softmax(net(x_adv), dim=1), F.softmax(logits, dim=1), reduction="batchmean")
                loss = F.cross_entropy(logits, yb) + c["beta"] * robust
            else:
                net.eval()
                x_adv = pgd(net, xb, yb, eps, c["steps"])
                net.train()
                w = c["clean_weight"]
                loss = w * F.cross_entropy(net(xb), yb) + (1 - w) * F.cross_entropy(net(x_adv), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
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
    sys.path.insert(0, str(TASK_DIR / "baseline"))
    import family
    from safetensors.numpy import save_file

    task = prepared("adversarial_robustness")
    gen = generator()
    tables, order, parts, images, labels = gen.generate()
    columns = family.FEATURES
    x = (tables["train"][columns].to_numpy(np.float32) / PIXEL_MAX).astype(np.float32)
    y = tables["train"]["label"].to_numpy(dtype=np.int64)
    public = pd.read_csv(task.public_dir / "train.csv")  # written sorted by id
    assert public.equals(tables["train"].sort_values("id").reset_index(drop=True)), "the replay differs from the files"
    pool_digits, pool_labels = images[parts["pool"]], labels[parts["pool"]]

    def fresh(epoch: int) -> tuple[np.ndarray, np.ndarray]:
        """Every pool digit drawn afresh through the generator (a new position each epoch), in its column order."""
        rng = np.random.default_rng([0, epoch])
        return (gen.draw(pool_digits, rng)[:, order] / PIXEL_MAX).astype(np.float32), pool_labels

    val = pd.read_csv(task.labels_dir / "val.csv")
    x_val = (val[columns].to_numpy(np.float32) / PIXEL_MAX).astype(np.float32)
    y_val = val["label"].to_numpy(dtype=np.int64)
    screened = []
    for name in args.configs:
        started = time.process_time()
        net = train(fresh if CONFIGS[name]["fresh"] else (lambda epoch: (x, y)), CONFIGS[name])
        clean, robust = screen(net, x_val, y_val)
        print(f"{name}: trained in {time.process_time() - started:.0f} CPU-s; val clean {clean:.4f}, "
              f"PGD-screened robust {robust:.4f}", flush=True)
        screened.append((robust if clean >= 0.7 else 0.0, name, net))
    picker = BestOnVal(task)
    for _, name, net in sorted(screened, key=lambda s: -s[0])[:args.finalists]:
        def write(out, net=net):
            save_file(family.to_tensors(net), str(out / "model.safetensors"), metadata={"hidden": json.dumps(net.hidden)})
        picker.add(name, {phase: evaluate(task, phase, write) for phase in ("val", "test")})
    picker.conclude()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
