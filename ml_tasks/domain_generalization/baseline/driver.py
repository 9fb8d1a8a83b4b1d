"""Harness-owned driver of the domain_generalization task: fits model.py on the training environments
and writes one 0/1 prediction per input row.

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

The harness restores this file before every run, so edits to it are discarded. It reads the public
training set, the inputs and params.json; it never sees targets or which environment an input
belongs to. It calls the editable `model.fit(x, y, env, params, device)` once, then
`model.predict(model_, x)` on the inputs in chunks of 32 rows, twice, in two different orders: a
prediction must depend on its own row only, so the two passes must agree (a model that adapts to the
batch it is shown, e.g. to the test environment's colour statistics, is rejected). It writes
`<out>/predictions.csv` (id, label). The shared pieces (command line, params, errors, seeding, the
two-pass prediction, writing) come from the harness's read-only `task_runtime` package.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import (DriverArgs, DriverError, driver_main, pick_device, read_params, read_table, seed_everything,
                          write_predictions)
from task_runtime.digits import scaled_pixels
from task_runtime.rowwise import predict_per_row

HERE = Path(__file__).resolve().parent
FEATURES = [f"x{i}" for i in range(200)]


def run(args: DriverArgs) -> None:
    sys.path.insert(0, str(HERE))
    import model  # the agent-editable module, next to this driver

    for name in ("fit", "predict"):
        if not callable(getattr(model, name, None)):
            raise DriverError("model.py must define fit(x, y, env, params, device) and predict(model, x)")
    params = read_params(HERE / "params.json")
    train = read_table(args.data / "train.csv", ["env", "label"] + FEATURES)
    inputs = read_table(args.inputs, ["id"] + FEATURES)
    device = pick_device()
    seed_everything(args.seed, import_torch=True)
    started = time.perf_counter()
    fitted = model.fit(scaled_pixels(train, FEATURES), train["label"].to_numpy(dtype=np.int64),
                       train["env"].to_numpy(dtype=np.int64), dict(params), device)
    ids = inputs["id"].to_numpy()
    labels = predict_per_row(lambda x: model.predict(fitted, x), scaled_pixels(inputs, FEATURES), ids, args.seed,
                             "predict", n_labels=2)
    path = write_predictions(args.out, pd.DataFrame({"id": ids, "label": labels}))
    print(f"[{args.phase}] fitted on {len(train)} rows ({device}, seed {args.seed}), predicted {len(ids)} inputs "
          f"in {time.perf_counter() - started:.1f} s; wrote {path}", flush=True)


def main(argv: list[str] | None = None) -> int:
    return driver_main(run, "Fit model.py on the training environments and predict the inputs.",
                       "{phase}_inputs.csv", "seeds python, numpy and torch before fitting", argv)


if __name__ == "__main__":
    sys.exit(main())
