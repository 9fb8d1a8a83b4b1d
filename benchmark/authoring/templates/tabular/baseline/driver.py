"""Harness-owned driver for the __TASK_NAME__ task: trains model.py on the public data, writes predictions.

    python driver.py --phase val  --data <public dir> --out <output dir> --seed N
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> --seed N

The harness restores this file before every run, so edits to it are discarded. It reads only the public
training data, the inputs to predict and params.json; it never sees labels, and it writes only
`<out>/predictions.csv` (id, label). The evaluator scores that file in a separate sandbox; nothing
printed here is parsed as a metric. The shared pieces (command line, params, errors, seeding, writing)
come from the harness's read-only `task_runtime` package (docs/tasks.md, "The task runtime").
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import (DriverArgs, DriverError, as_vector, driver_main, read_params, seed_everything,
                          write_predictions)

HERE = Path(__file__).resolve().parent


def check_predictions(raw: object, n_rows: int) -> np.ndarray:
    """One integer label per input row, in input order; anything else is a clear error, not a silent fix."""
    values = as_vector(raw, n_rows, "fit_predict", "label")
    if not np.all(np.isfinite(values)) or not np.array_equal(values, np.round(values)):
        raise DriverError("fit_predict must return integer class labels")
    return values.astype(np.int64)


def run(args: DriverArgs) -> None:
    sys.path.insert(0, str(HERE))
    import model  # the agent-editable module, next to this driver

    if not callable(getattr(model, "fit_predict", None)):
        raise DriverError("model.py must define fit_predict(train_x, train_y, inputs_x, params, seed)")
    params = read_params(HERE / "params.json")
    train = pd.read_csv(args.data / "train.csv")
    inputs = pd.read_csv(args.inputs)
    features = [c for c in train.columns if c not in ("id", "label")]
    seed_everything(args.seed)  # agent code that draws from the global RNGs stays reproducible
    labels = check_predictions(model.fit_predict(train[features].copy(), train["label"].to_numpy(),
                                                 inputs[features].copy(), dict(params), args.seed), len(inputs))
    write_predictions(args.out, pd.DataFrame({"id": inputs["id"], "label": labels}))
    print(f"trained on {len(train)} rows, predicted {len(inputs)} rows", flush=True)


def main(argv: list[str] | None = None) -> int:
    return driver_main(run, "Run model.py on the __TASK_NAME__ task's data.", inputs="{phase}_inputs.csv",
                       seed_help="seed of all training randomness", argv=argv)


if __name__ == "__main__":
    sys.exit(main())
