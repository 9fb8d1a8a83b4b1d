"""Harness-owned driver of the continual_learning task: feeds the splits in order, one isolated call each.

    python driver.py --phase val  --data <public> --out <output> [--seed N]
    python driver.py --phase test --data <public> --test-inputs <dir> --out <output> [--seed N]

The harness restores this file before every run. For split k = 0..4 it forks a child that loads only
split k's training data, the state the learner kept after split k-1 and the inputs to predict, then
locks the data folders (`run_isolated`, from the harness's read-only `task_runtime.isolation`) and
calls the editable `learner.train_split` and `learner.predict`. `predict` is called on the inputs in
chunks of 32 images, twice, in two different orders (`task_runtime.rowwise.predict_per_row`), and the run
fails unless both passes give every image the same label: a prediction must depend on its own image only
(the inputs to predict are not training data). Everything a learner carries from
one split to the next is its returned state: at most STATE_BUDGET numbers (weights, exemplars,
statistics, anything), checked here. It writes `<out>/predictions.csv` (after_split, id, label): the predicted class of every input
after each split, from which the evaluator computes the accuracy matrix, average accuracy and
forgetting. Nothing printed here is parsed as a metric.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime import (DriverArgs, DriverError, IsolationError, as_arrays, as_labels, driver_main, load_arrays,
                          load_labels, pick_device, read_npz, read_params, run_isolated, seed_everything,
                          warm_up_torch, write_predictions)
from task_runtime.rowwise import predict_per_row

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SPLITS = ((0, 1), (2, 3), (4, 5), (6, 7), (8, 9))
STATE_BUDGET = 20_000  # numbers a learner may carry from one split to the next, everything included


def run(args: DriverArgs) -> None:
    phase, data, inputs_path, seed = args.phase, args.data, args.inputs, args.seed
    warm_up_torch()  # once here, so every child starts with torch loaded (CUDA is left untouched)
    params = read_params(HERE / "params.json")
    eval_inputs = read_npz(inputs_path, ("id", "x"))
    n_eval = len(eval_inputs["id"])
    blocked = [data, inputs_path.parent]
    scratch = Path(tempfile.mkdtemp(prefix="cl-driver-"))
    blocked.append(scratch)
    predictions = []
    state_path: Path | None = None
    started = time.perf_counter()
    try:
        for split, classes in enumerate(SPLITS):
            child_out = scratch / f"split{split}"
            child_out.mkdir()

            def load(split: int = split, previous: Path | None = state_path) -> dict:
                train = read_npz(data / f"train_split{split}.npz", ("x", "y"))
                state = load_arrays(previous, STATE_BUDGET, "train_split") if previous is not None else None
                seed_everything(seed * 1000 + split)
                return {"train": train, "state": state, "device": pick_device()}

            def work(inputs: dict, split: int = split, classes: tuple = classes, child_out: Path = child_out) -> None:
                import learner  # the agent-editable module, imported only inside the locked child

                for name in ("train_split", "predict"):
                    if not callable(getattr(learner, name, None)):
                        raise DriverError(f"learner.py must define {name} (see the description)")
                train = inputs["train"]
                state = as_arrays(learner.train_split(inputs["state"], train["x"].copy(), train["y"].copy(),
                                                     list(classes), split, dict(params), inputs["device"]),
                                  STATE_BUDGET, "train_split")
                labels = predict_per_row(
                    lambda batch: as_labels(learner.predict(state, batch, dict(params), inputs["device"]), len(batch),
                                            "predict"),
                    eval_inputs["x"], eval_inputs["id"], seed * 1000 + split, "predict", unit="image", n_labels=10)
                np.savez(child_out / "state.npz", **state)
                np.save(child_out / "labels.npy", labels)

            t0 = time.perf_counter()
            run_isolated(f"split {split}", load, work, blocked, allowed_writes=[child_out])
            state = load_arrays(child_out / "state.npz", STATE_BUDGET, "train_split")
            labels = load_labels(child_out / "labels.npy", n_eval, "predict")
            state_path = scratch / f"state{split}.npz"  # a clean copy, so nothing a child left can be replayed
            np.savez(state_path, **state)
            predictions.append(labels)
            print(f"[{phase}] split {split} classes {classes}: {sum(a.size for a in state.values())} state numbers, "
                  f"{time.perf_counter() - t0:.2f} s", flush=True)
    except IsolationError as exc:
        raise DriverError(str(exc)) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    ids = eval_inputs["id"]
    write_predictions(args.out, pd.DataFrame({"after_split": np.repeat(np.arange(len(predictions)), len(ids)),
                                              "id": np.tile(ids, len(predictions)),
                                              "label": np.concatenate(predictions)}))
    print(f"[{phase}] wrote predictions after {len(predictions)} splits in {time.perf_counter() - started:.1f} s",
          flush=True)


def main(argv: list[str] | None = None) -> int:
    return driver_main(run, "Run learner.py through the class-incremental splits.", inputs="{phase}_inputs.npz",
                       seed_help="seeds the learner's randomness", argv=argv)


if __name__ == "__main__":
    sys.exit(main())
