"""Harness-owned driver of the semi_supervised task: fits model.py on the labeled and unlabeled
training images and writes one predicted digit per input image.

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

The harness restores this file before every run, so edits to it are discarded. It reads the public
labeled and unlabeled training images, the inputs and params.json; it never sees the inputs' labels.
It calls the editable `model.fit(x_labeled, y_labeled, x_unlabeled, params, device)` once, then
`model.predict(model_, x)` on the inputs in chunks of 32 images, twice, in two different orders:
a prediction must depend on its own image only, so the two passes must agree (the validation and
test images are not extra unlabeled data; a model that learns from the batch it is shown is
rejected). It writes `<out>/predictions.csv` (id, label). The shared pieces (command line, params,
errors, seeding, the two-pass prediction, writing) come from the harness's read-only `task_runtime`
package.
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
N_CLASSES = 10
PIXELS = [f"p{i}" for i in range(144)]  # a 12x12 image, row by row


def run(args: DriverArgs) -> None:
    sys.path.insert(0, str(HERE))
    import model  # the agent-editable module, next to this driver

    for name in ("fit", "predict"):
        if not callable(getattr(model, name, None)):
            raise DriverError("model.py must define fit(x_labeled, y_labeled, x_unlabeled, params, device) "
                              "and predict(model, x)")
    params = read_params(HERE / "params.json")
    labeled = read_table(args.data / "train_labeled.csv", PIXELS + ["label"])
    unlabeled = read_table(args.data / "train_unlabeled.csv", PIXELS)
    inputs = read_table(args.inputs, ["id"] + PIXELS)
    device = pick_device()
    seed_everything(args.seed, import_torch=True)
    started = time.perf_counter()
    fitted = model.fit(scaled_pixels(labeled, PIXELS), labeled["label"].to_numpy(dtype=np.int64),
                       scaled_pixels(unlabeled, PIXELS), dict(params), device)
    ids = inputs["id"].to_numpy()
    labels = predict_per_row(lambda x: model.predict(fitted, x), scaled_pixels(inputs, PIXELS), ids, args.seed,
                             "predict", n_labels=N_CLASSES)
    path = write_predictions(args.out, pd.DataFrame({"id": ids, "label": labels}))
    print(f"[{args.phase}] fitted on {len(labeled)} labeled + {len(unlabeled)} unlabeled images ({device}, "
          f"seed {args.seed}), predicted {len(ids)} inputs in {time.perf_counter() - started:.1f} s; wrote {path}",
          flush=True)


def main(argv: list[str] | None = None) -> int:
    return driver_main(run, "Fit model.py on labeled + unlabeled digits and predict the inputs.",
                       "{phase}_inputs.csv", "seeds python, numpy and torch before fitting", argv)


if __name__ == "__main__":
    sys.exit(main())
