"""Harness-owned driver of the ood_detection task: fits model.py on the in-distribution digits and
writes one OOD score per input image.

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

The harness restores this file before every run, so edits to it are discarded. It reads the public
training set, the inputs to score and params.json; it never sees which inputs are OOD. It calls the
editable `model.fit(x, y, params, device)` once, then `model.score(detector, x)` on the inputs in
chunks of 32 images, twice, in two different orders: a score must depend on its own image only,
so the two passes must agree (a detector that pools the inputs it is shown is rejected). It writes
`<out>/scores.csv` (id, score; higher means more likely out of distribution). The shared pieces
(command line, params, errors, seeding, the two-pass scoring, writing) come from the harness's
read-only `task_runtime` package.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import (DriverArgs, DriverError, driver_main, pick_device, read_params, read_table, seed_everything,
                          write_predictions)
from task_runtime.digits import PIXELS, scaled_pixels
from task_runtime.rowwise import predict_per_row

HERE = Path(__file__).resolve().parent
AGREE_RTOL, AGREE_ATOL = 1e-4, 1e-5  # float scores of one image may differ by rounding between the passes


def run(args: DriverArgs) -> None:
    sys.path.insert(0, str(HERE))
    import model  # the agent-editable module, next to this driver

    for name in ("fit", "score"):
        if not callable(getattr(model, name, None)):
            raise DriverError("model.py must define fit(x, y, params, device) and score(detector, x)")
    params = read_params(HERE / "params.json")
    train = read_table(args.data / "train.csv", PIXELS + ["label"])
    inputs = read_table(args.inputs, ["id"] + PIXELS)
    x, y = scaled_pixels(train), train["label"].to_numpy(dtype=np.int64)
    device = pick_device()
    seed_everything(args.seed, import_torch=True)
    started = time.perf_counter()
    detector = model.fit(x.copy(), y.copy(), dict(params), device)
    ids = inputs["id"].to_numpy()
    scores = predict_per_row(lambda batch: model.score(detector, batch), scaled_pixels(inputs), ids, args.seed,
                             "score", unit="image", rtol=AGREE_RTOL, atol=AGREE_ATOL)
    path = write_predictions(args.out, pd.DataFrame({"id": ids, "score": scores}), "scores.csv")
    print(f"[{args.phase}] fitted on {len(y)} images ({device}, seed {args.seed}), scored {len(ids)} inputs "
          f"in {time.perf_counter() - started:.1f} s; wrote {path}", flush=True)


def main(argv: list[str] | None = None) -> int:
    return driver_main(run, "Fit model.py and score the inputs for out-of-distribution-ness.",
                       "{phase}_inputs.csv", "seeds python, numpy and torch before fitting", argv)


if __name__ == "__main__":
    sys.exit(main())
