"""Harness-owned driver for the fairness task: runs model.py once, writes the predictions.

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

The harness restores this file before every run, so edits to it are discarded. It reads only the
public training data, the inputs to predict and params.json, and writes `<out>/predictions.csv`
(id, pred). The evaluator scores that file in a separate process. The shared pieces (command line,
params, errors, seeding, writing) come from the harness's read-only `task_runtime` package.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import (DriverArgs, DriverError, as_vector, driver_main, read_params, seed_everything,
                          write_predictions)

HERE = Path(__file__).resolve().parent


def check_predictions(raw: object, n_rows: int) -> np.ndarray:
    values = as_vector(raw, n_rows, "fit_predict", "label")
    if not np.all(np.isin(values, (0.0, 1.0))):
        raise DriverError("fit_predict must return hard labels 0 or 1 (threshold your scores yourself)")
    return values.astype(int)


def run(args: DriverArgs) -> None:
    sys.path.insert(0, str(HERE))
    import model  # the agent-editable module, next to this driver

    if not callable(getattr(model, "fit_predict", None)):
        raise DriverError("model.py must define fit_predict(train, inputs, params) -> array of 0/1")
    params = read_params(HERE / "params.json")
    train = pd.read_csv(args.data / "train.csv").set_index("id")
    inputs = pd.read_csv(args.inputs).set_index("id")
    seed_everything(args.seed)
    started = time.perf_counter()
    pred = check_predictions(model.fit_predict(train.copy(), inputs.copy(), {**params, "seed": args.seed}),
                             len(inputs))
    write_predictions(args.out, pd.DataFrame({"id": inputs.index.to_numpy(), "pred": pred}))
    rates = [pred[inputs["a"].to_numpy() == g].mean() for g in (0, 1)]
    print(f"[{args.phase}] {len(train)} train rows, {len(inputs)} inputs; positive rate a=0 {rates[0]:.3f}, "
          f"a=1 {rates[1]:.3f}; {time.perf_counter() - started:.1f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    return driver_main(run, "Run model.py on the fairness task's data.", inputs="{phase}_inputs.csv",
                       seed_help="seeds the global RNGs; also passed as params['seed']", argv=argv)


if __name__ == "__main__":
    sys.exit(main())
