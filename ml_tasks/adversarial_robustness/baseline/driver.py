"""Harness-owned driver of the adversarial_robustness task: trains model.py's network, exports its weights.

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

The harness restores this file (and family.py) before every run, so edits to them are discarded. It
reads only the public training set and params.json, calls the editable `model.train_model`, checks
that it returned a `family.RobustMLP`, and writes its weights to `<out>/model.safetensors`. The
val and test phases train the same way; the evaluator then attacks the network, rebuilt from the
weights alone, on the validation or the hidden test images. Nothing printed here is parsed as a
metric. The shared pieces (command line, params, errors, seeding, reading the data) come from the
harness's read-only `task_runtime` package.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from task_runtime import DriverArgs, DriverError, driver_main, pick_device, read_params, read_table, seed_everything
from task_runtime.digits import scaled_pixels

HERE = Path(__file__).resolve().parent


def run(args: DriverArgs) -> None:
    sys.path.insert(0, str(HERE))
    import torch

    import family
    import model  # the agent-editable module, next to this driver
    from safetensors.numpy import save_file

    if not callable(getattr(model, "train_model", None)):
        raise DriverError("model.py must define train_model(x, y, params, device) -> family.RobustMLP")
    params = read_params(HERE / "params.json")
    train = read_table(args.data / "train.csv", family.FEATURES + ["label"])
    x, y = scaled_pixels(train, family.FEATURES), train["label"].to_numpy(dtype=np.int64)
    device = pick_device()
    seed_everything(args.seed, import_torch=True)
    started = time.perf_counter()
    net = model.train_model(x.copy(), y.copy(), dict(params), device)
    if not isinstance(net, family.RobustMLP):
        raise DriverError(f"train_model returned {type(net).__name__}; it must return a family.RobustMLP")
    try:
        tensors = family.to_tensors(net)
        family.from_tensors(tensors)  # the evaluator's checks, early, with a clearer message
    except family.FamilyError as exc:
        raise DriverError(f"the returned network is outside the model family: {exc}") from None
    with torch.no_grad():
        check = family.from_tensors(tensors)
        train_acc = float((check(torch.from_numpy(x)).argmax(1).numpy() == y).mean())
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = args.out / ".model.safetensors.tmp"
    save_file(tensors, str(tmp), metadata={"hidden": json.dumps(net.hidden)})
    os.replace(tmp, args.out / "model.safetensors")
    print(f"[{args.phase}] trained on {len(y)} images ({device}, seed {args.seed}) in "
          f"{time.perf_counter() - started:.1f} s; hidden {net.hidden}; clean train accuracy {train_acc:.4f}; "
          f"wrote {args.out / 'model.safetensors'}", flush=True)


def main(argv: list[str] | None = None) -> int:
    # Both phases train the same way on the public data: the test inputs folder holds nothing to read.
    return driver_main(run, "Train model.py's network on the digits training set.", ".",
                       "seeds python, numpy and torch before training", argv)


if __name__ == "__main__":
    sys.exit(main())
