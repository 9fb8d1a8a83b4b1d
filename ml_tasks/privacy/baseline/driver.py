"""Harness-owned driver for the privacy task: DP-SGD training under a fixed (epsilon, delta) budget.

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

The harness restores this file before every run. The agent edits only `recipe.json`, a declarative
training recipe that this driver validates strictly; no agent code runs in this process. That is the
enforcement: code that ran next to the training data could read it outside the accountant
(memorize it in a buffer, initialize weights from it, monkeypatch opacus's noise or the accountant,
train extra non-private steps, or overwrite the predictions from a leftover thread). Here:
- the privacy parameters are constants of this file (EPSILON, DELTA);
- opacus calibrates the noise multiplier to (EPSILON, DELTA, sampling rate, epochs) before training;
- every step is one Poisson-sampled batch of the private training set through opacus's
  per-sample clipping and noise; nothing else touches the training labels;
- after training the accountant's epsilon is checked again, and a run that exceeds the budget
  writes no predictions (exit 1);
- the validation and test inputs are used only for the final forward pass.
It writes `<out>/predictions.csv` (id, label) and `<out>/privacy.json` (the accountant's figures).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
EPSILON = 3.0  # the privacy budget; also stated in description.md and the manifest
DELTA = 1e-5  # below 1 / n_train (1078 training images)
N_CLASSES = 10
IMAGE = (1, 8, 8)

# recipe key -> (type, check, default); a recipe with any other key is rejected
RECIPE = {
    "architecture": (str, lambda v: v in ("mlp", "cnn"), "mlp"),
    "hidden": (list, lambda v: 1 <= len(v) <= 4 and all(isinstance(w, int) and 1 <= w <= 512 for w in v), [128]),
    "channels": (list, lambda v: 1 <= len(v) <= 3 and all(isinstance(w, int) and 1 <= w <= 64 for w in v), [16, 32]),
    "activation": (str, lambda v: v in ("relu", "tanh", "elu", "gelu"), "relu"),
    "group_norm_groups": (int, lambda v: 0 <= v <= 16, 0),
    "optimizer": (str, lambda v: v in ("sgd", "adam"), "sgd"),
    "lr": (float, lambda v: 0.0 <= v <= 10.0, 0.5),
    "momentum": (float, lambda v: 0.0 <= v < 1.0, 0.9),
    "weight_decay": (float, lambda v: 0.0 <= v <= 0.1, 0.0),
    "batch_size": (int, lambda v: 8 <= v <= 1078, 64),
    "epochs": (int, lambda v: 1 <= v <= 100, 15),
    "max_grad_norm": (float, lambda v: 0.001 <= v <= 100.0, 1.0),
}


class DriverError(Exception):
    """A problem with the recipe, the inputs or the budget: reported as one line, exit 1."""


def read_recipe(path: Path) -> dict:
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise DriverError(f"{path.name} is missing") from None
    except json.JSONDecodeError as exc:
        raise DriverError(f"{path.name} is not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise DriverError(f"{path.name} must hold a JSON object")
    unknown = sorted(set(raw) - set(RECIPE))
    if unknown:
        raise DriverError(f"{path.name}: unknown key {unknown[0]!r} (known: {', '.join(RECIPE)})")
    recipe = {}
    for key, (kind, check, default) in RECIPE.items():
        value = raw.get(key, default)
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or isinstance(value, bool) or not check(value):
            raise DriverError(f"{path.name}: {key}={value!r} is not allowed (see description.md for the ranges)")
        recipe[key] = value
    return recipe


def device():
    """CUDA when the manifest gave this run a GPU (the sandbox exposes it) and torch sees it; else CPU."""
    import torch

    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    return torch.device("cuda" if visible not in ("", "-1") and torch.cuda.is_available() else "cpu")


def build_model(recipe: dict):
    import torch.nn as nn

    act = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "gelu": nn.GELU}[recipe["activation"]]
    groups = recipe["group_norm_groups"]
    layers: list = []
    if recipe["architecture"] == "cnn":
        layers.append(nn.Unflatten(1, IMAGE))
        channels = IMAGE[0]
        for width in recipe["channels"]:
            layers.append(nn.Conv2d(channels, width, kernel_size=3, padding=1))
            if groups and width % groups == 0:
                layers.append(nn.GroupNorm(groups, width))
            layers += [act(), nn.MaxPool2d(2, ceil_mode=True)]
            channels = width
        side = IMAGE[1]
        for _ in recipe["channels"]:
            side = -(-side // 2)
        layers.append(nn.Flatten())
        features = channels * side * side
    else:
        features = int(np.prod(IMAGE))
    for width in recipe["hidden"] if recipe["architecture"] == "mlp" else recipe["hidden"][:1]:
        layers.append(nn.Linear(features, width))
        if groups and width % groups == 0:
            layers.append(nn.GroupNorm(groups, width))
        layers.append(act())
        features = width
    layers.append(nn.Linear(features, N_CLASSES))
    return nn.Sequential(*layers)


def train_private(recipe: dict, x: np.ndarray, y: np.ndarray, seed: int):
    """DP-SGD with opacus; returns the trained model and the accountant's report."""
    import torch
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(seed)
    dev = device()
    if dev.type == "cpu":
        torch.set_num_threads(1)  # these models are tiny: more threads only add overhead
    model = build_model(recipe).to(dev)
    params = model.parameters()
    if recipe["optimizer"] == "adam":
        optimizer = torch.optim.Adam(params, lr=recipe["lr"], weight_decay=recipe["weight_decay"])
    else:
        optimizer = torch.optim.SGD(params, lr=recipe["lr"], momentum=recipe["momentum"],
                                    weight_decay=recipe["weight_decay"])
    data = TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.long))
    loader = DataLoader(data, batch_size=recipe["batch_size"], generator=torch.Generator().manual_seed(seed))
    engine = PrivacyEngine(accountant="rdp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # opacus warns about its non-cryptographic RNG and backward hooks
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model, optimizer=optimizer, data_loader=loader, target_epsilon=EPSILON, target_delta=DELTA,
            epochs=recipe["epochs"], max_grad_norm=recipe["max_grad_norm"], poisson_sampling=True)
        loss_fn = torch.nn.CrossEntropyLoss()
        steps = 0
        model.train()
        for _ in range(recipe["epochs"]):
            for xb, yb in loader:
                if len(xb) == 0:
                    continue  # Poisson sampling can draw an empty batch; it still counts in the accountant
                optimizer.zero_grad(set_to_none=True)
                loss_fn(model(xb.to(dev)), yb.to(dev)).backward()
                optimizer.step()
                steps += 1
    spent = float(engine.get_epsilon(DELTA))
    report = {"epsilon_budget": EPSILON, "delta": DELTA, "epsilon_spent": spent,
              "noise_multiplier": float(optimizer.noise_multiplier), "max_grad_norm": recipe["max_grad_norm"],
              "sample_rate": float(loader.sample_rate), "steps": steps, "epochs": recipe["epochs"]}
    if not spent <= EPSILON * (1 + 1e-6):
        raise DriverError(f"the accountant reports epsilon {spent:.4f} > budget {EPSILON}; refusing to predict")
    return model, report


def predict(model, x: np.ndarray) -> np.ndarray:
    import torch

    model.eval()
    dev = next(model.parameters()).device
    with torch.no_grad():
        return model(torch.tensor(x, dtype=torch.float32, device=dev)).argmax(dim=1).cpu().numpy()


def run(phase: str, data: Path, inputs_path: Path, out: Path, seed: int) -> int:
    recipe = read_recipe(HERE / "recipe.json")
    train = pd.read_csv(data / "train.csv")
    inputs = pd.read_csv(inputs_path)
    pixels = [f"p{i}" for i in range(int(np.prod(IMAGE)))]
    started = time.perf_counter()
    model, report = train_private(recipe, train[pixels].to_numpy(np.float32), train["label"].to_numpy(), seed)
    labels = predict(model, inputs[pixels].to_numpy(np.float32))
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".predictions.csv.tmp"
    pd.DataFrame({"id": inputs["id"].to_numpy(), "label": labels}).to_csv(tmp, index=False, lineterminator="\n")
    os.replace(tmp, out / "predictions.csv")
    (out / "privacy.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"[{phase}] DP-SGD: epsilon {report['epsilon_spent']:.3f} of {EPSILON} (delta {DELTA}), noise multiplier "
          f"{report['noise_multiplier']:.3f}, {report['steps']} steps, {time.perf_counter() - started:.1f} s on "
          f"{device()}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Train with DP-SGD from recipe.json and predict.")
    parser.add_argument("--phase", choices=["val", "test"], required=True)
    parser.add_argument("--data", type=Path, required=True, help="public data dir (train.csv, val_inputs.csv)")
    parser.add_argument("--test-inputs", type=Path, help="dir with test_inputs.csv (test phase only)")
    parser.add_argument("--out", type=Path, required=True, help="where predictions.csv is written")
    parser.add_argument("--seed", type=int, default=0, help="seeds initialization, sampling and DP noise")
    args = parser.parse_args(argv)
    if args.phase == "test" and args.test_inputs is None:
        parser.error("--phase test needs --test-inputs")
    inputs = args.data / "val_inputs.csv" if args.phase == "val" else args.test_inputs / "test_inputs.csv"
    try:
        return run(args.phase, args.data, inputs, args.out, args.seed)
    except DriverError as exc:
        print(f"driver error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
