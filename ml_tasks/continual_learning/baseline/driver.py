"""Harness-owned driver of the continual_learning task: feeds the splits in order, one isolated call each.

    python driver.py --phase val  --data <public> --out <output> [--seed N]
    python driver.py --phase test --data <public> --test-inputs <dir> --out <output> [--seed N]

The harness restores this file (and isolation.py) before every run. For split k = 0..4 it forks a
child that loads only split k's training data, the state the learner kept after split k-1 and the
inputs to predict, then locks the data folders (isolation.py) and calls the editable
`learner.train_split` and `learner.predict`. Everything a learner carries from one split to the next
is its returned state: at most STATE_BUDGET numbers (weights, exemplars, statistics, anything), checked
here. It writes `<out>/predictions.csv` (after_split, id, label): the predicted class of every input
after each split, from which the evaluator computes the accuracy matrix, average accuracy and
forgetting. Nothing printed here is parsed as a metric.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from isolation import IsolationError, run_isolated, warm_up_torch  # noqa: E402

SPLITS = ((0, 1), (2, 3), (4, 5), (6, 7), (8, 9))
N_CLASSES = 10
N_FEATURES = 64
STATE_BUDGET = 20_000  # numbers a learner may carry from one split to the next, everything included
_STATE_FILE_CAP = STATE_BUDGET * 8 + (1 << 20)  # bytes: float64 at most, plus npz overhead


class DriverError(Exception):
    """A problem with the inputs or with what learner.py did: reported as one line, exit 1."""


def read_params(path: Path) -> dict:
    try:
        params = json.loads(path.read_text())
    except FileNotFoundError:
        raise DriverError(f"{path.name} is missing; it must hold a JSON object of hyper-parameters") from None
    except json.JSONDecodeError as exc:
        raise DriverError(f"{path.name} is not valid JSON: {exc}") from None
    if not isinstance(params, dict):
        raise DriverError(f"{path.name} must hold a JSON object, got {type(params).__name__}")
    return params


def pick_device() -> str:
    """CUDA when a GPU is visible to this job, else CPU (decided in the child: the parent never touches CUDA)."""
    if not os.environ.get("CUDA_VISIBLE_DEVICES", "").strip():
        return "cpu"
    try:
        import torch
        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def as_state(raw: Any, where: str) -> dict[str, np.ndarray]:
    """The learner's state as plain numeric arrays (tensors are converted), within STATE_BUDGET."""
    if not isinstance(raw, dict):
        raise DriverError(f"{where} must return a dict of arrays, got {type(raw).__name__}")
    state: dict[str, np.ndarray] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not key.isidentifier():
            raise DriverError(f"{where}: state keys must be identifiers, got {key!r}")
        if hasattr(value, "detach"):
            value = value.detach().cpu().numpy()
        array = np.asarray(value)
        if array.dtype.kind not in "biuf":
            raise DriverError(f"{where}: state[{key!r}] must be numeric, got dtype {array.dtype}")
        state[key] = array
    total = sum(a.size for a in state.values())
    if total > STATE_BUDGET:
        raise DriverError(f"{where}: state holds {total} numbers; the budget is {STATE_BUDGET}")
    return state


def load_state(path: Path) -> dict[str, np.ndarray]:
    """Read a state file a child wrote: untrusted, so sizes are checked before anything is loaded."""
    if not path.is_file() or path.is_symlink() or path.stat().st_size > _STATE_FILE_CAP:
        raise DriverError("the learner's state file is missing or too large")
    try:
        with zipfile.ZipFile(path) as archive:
            if sum(i.file_size for i in archive.infolist()) > _STATE_FILE_CAP:
                raise DriverError("the learner's state is over the budget")
        with np.load(path, allow_pickle=False) as data:
            raw = {k: data[k] for k in data.files}
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise DriverError(f"the learner's state file is unreadable ({type(exc).__name__})") from None
    return as_state(raw, "train_split")


def as_labels(raw: Any, n: int, where: str) -> np.ndarray:
    """One class in 0..9 per input row; class scores of shape (n, 10) are reduced by argmax."""
    if hasattr(raw, "detach"):
        raw = raw.detach().cpu().numpy()
    try:
        values = np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DriverError(f"{where} must return numbers ({exc})") from None
    if values.shape == (n, N_CLASSES):
        if not np.isfinite(values).all():
            raise DriverError(f"{where} returned non-finite class scores")
        return values.argmax(axis=1).astype(np.int64)
    if values.shape != (n,):
        raise DriverError(f"{where} returned shape {values.shape}; expected ({n},) labels or ({n}, {N_CLASSES}) scores")
    if not np.isfinite(values).all() or not np.array_equal(values, np.round(values)) or values.min() < 0 \
            or values.max() >= N_CLASSES:
        raise DriverError(f"{where} must return integer labels in 0..{N_CLASSES - 1}")
    return values.astype(np.int64)


def read_npz(path: Path, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise DriverError(f"expected data file {path} does not exist")
    with np.load(path, allow_pickle=False) as data:
        missing = [k for k in keys if k not in data.files]
        if missing:
            raise DriverError(f"{path.name} lacks arrays {missing}")
        return {k: data[k] for k in keys}


def run(phase: str, data: Path, inputs_path: Path, out: Path, seed: int) -> int:
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
                state = load_state(previous) if previous is not None else None
                seed_everything(seed * 1000 + split)
                return {"train": train, "state": state, "device": pick_device()}

            def work(inputs: dict, split: int = split, classes: tuple = classes, child_out: Path = child_out) -> None:
                import learner  # the agent-editable module, imported only inside the locked child

                for name in ("train_split", "predict"):
                    if not callable(getattr(learner, name, None)):
                        raise DriverError(f"learner.py must define {name} (see the description)")
                train = inputs["train"]
                state = as_state(learner.train_split(inputs["state"], train["x"].copy(), train["y"].copy(),
                                                     list(classes), split, dict(params), inputs["device"]),
                                 "train_split")
                labels = as_labels(learner.predict(state, eval_inputs["x"].copy(), dict(params), inputs["device"]),
                                   n_eval, "predict")
                np.savez(child_out / "state.npz", **state)
                np.save(child_out / "labels.npy", labels)

            t0 = time.perf_counter()
            run_isolated(f"split {split}", load, work, blocked, allowed_writes=[child_out])
            state = load_state(child_out / "state.npz")
            labels_file = child_out / "labels.npy"
            if labels_file.is_symlink() or not labels_file.is_file() or labels_file.stat().st_size > 16 * n_eval + 4096:
                raise DriverError("predict's labels file is missing or too large")
            labels = as_labels(np.load(labels_file, allow_pickle=False), n_eval, "predict")
            state_path = scratch / f"state{split}.npz"  # a clean copy, so nothing a child left can be replayed
            np.savez(state_path, **state)
            predictions.append(labels)
            print(f"[{phase}] split {split} classes {classes}: {sum(a.size for a in state.values())} state numbers, "
                  f"{time.perf_counter() - t0:.2f} s", flush=True)
    except IsolationError as exc:
        raise DriverError(str(exc)) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    out.mkdir(parents=True, exist_ok=True)
    rows = [f"{split},{i},{label}" for split, labels in enumerate(predictions)
            for i, label in zip(eval_inputs["id"].tolist(), labels.tolist())]
    tmp = out / ".predictions.csv.tmp"
    tmp.write_text("after_split,id,label\n" + "\n".join(rows) + "\n")
    os.replace(tmp, out / "predictions.csv")
    print(f"[{phase}] wrote predictions after {len(predictions)} splits in {time.perf_counter() - started:.1f} s",
          flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run learner.py through the class-incremental splits.")
    parser.add_argument("--phase", choices=["val", "test"], required=True)
    parser.add_argument("--data", type=Path, required=True, help="public data dir")
    parser.add_argument("--test-inputs", type=Path, help="dir with test_inputs.npz (test phase only)")
    parser.add_argument("--out", type=Path, required=True, help="where predictions.csv is written")
    parser.add_argument("--seed", type=int, default=0, help="seeds the learner's randomness")
    args = parser.parse_args(argv)
    if args.phase == "test" and args.test_inputs is None:
        parser.error("--phase test needs --test-inputs")
    inputs = args.data / "val_inputs.npz" if args.phase == "val" else args.test_inputs / "test_inputs.npz"
    try:
        return run(args.phase, args.data.resolve(), inputs.resolve(), args.out, args.seed)
    except DriverError as exc:
        print(f"driver error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
