"""Harness-owned driver of the ood_detection task: fits model.py on the in-distribution digits and
writes one OOD score per input image.

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

The harness restores this file before every run, so edits to it are discarded. It reads the public
training set, the inputs to score and params.json; it never sees which inputs are OOD. It calls the
editable `model.fit(x, y, params, device)` once, then `model.score(detector, x)` on the inputs in
chunks of CHUNK images, twice, in two different orders: a score must depend on its own image only,
so the two passes must agree (a detector that pools the inputs it is shown is rejected). It writes
`<out>/scores.csv` (id, score; higher means more likely out of distribution).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
PIXELS = [f"p{i}" for i in range(64)]
PIXEL_MAX = 16.0
CHUNK = 32
AGREE_RTOL, AGREE_ATOL = 1e-4, 1e-5


class DriverError(Exception):
    """A problem with the inputs or with what model.py returned: reported as one line, exit 1."""


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


def read_table(path: Path, required: list[str]) -> pd.DataFrame:
    if not path.is_file():
        raise DriverError(f"expected data file {path} does not exist")
    frame = pd.read_csv(path)
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise DriverError(f"{path.name} lacks columns {missing[:3]}")
    return frame


def pixels(frame: pd.DataFrame) -> np.ndarray:
    return (frame[PIXELS].to_numpy(dtype=np.float32) / PIXEL_MAX).astype(np.float32)


def pick_device() -> str:
    """CUDA when the sandbox exposes a GPU (the manifest asked for one), else CPU."""
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(seed)


def score_in_chunks(model, detector, x: np.ndarray, order: np.ndarray) -> np.ndarray:
    scores = np.empty(len(x), dtype=np.float64)
    for start in range(0, len(x), CHUNK):
        idx = order[start:start + CHUNK]
        try:
            raw = np.asarray(model.score(detector, x[idx].copy()), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise DriverError(f"score must return numbers ({exc})") from None
        if raw.ndim == 2 and raw.shape[1] == 1:
            raw = raw[:, 0]
        if raw.shape != (len(idx),):
            raise DriverError(f"score returned shape {raw.shape} for {len(idx)} images; expected ({len(idx)},)")
        if not np.isfinite(raw).all():
            raise DriverError(f"score returned {int((~np.isfinite(raw)).sum())} non-finite values (NaN or inf)")
        scores[idx] = raw
    return scores


def run(phase: str, data: Path, inputs_path: Path, out: Path, seed: int) -> int:
    sys.path.insert(0, str(HERE))
    import model  # the agent-editable module, next to this driver

    for name in ("fit", "score"):
        if not callable(getattr(model, name, None)):
            raise DriverError("model.py must define fit(x, y, params, device) and score(detector, x)")
    params = read_params(HERE / "params.json")
    train = read_table(data / "train.csv", PIXELS + ["label"])
    inputs = read_table(inputs_path, ["id"] + PIXELS)
    x, y = pixels(train), train["label"].to_numpy(dtype=np.int64)
    device = pick_device()
    seed_everything(seed)
    started = time.perf_counter()
    detector = model.fit(x.copy(), y.copy(), dict(params), device)
    x_in = pixels(inputs)
    first = score_in_chunks(model, detector, x_in, np.arange(len(x_in)))
    second = score_in_chunks(model, detector, x_in, np.random.default_rng(seed + 1).permutation(len(x_in)))
    if not np.allclose(first, second, rtol=AGREE_RTOL, atol=AGREE_ATOL):
        worst = int(np.argmax(np.abs(first - second)))
        raise DriverError(f"score is not a function of each image alone: image {int(inputs['id'].iloc[worst])} "
                          f"scored {first[worst]:.6g} and {second[worst]:.6g} in two passes")
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".scores.csv.tmp"
    pd.DataFrame({"id": inputs["id"].to_numpy(), "score": first}).to_csv(tmp, index=False, lineterminator="\n")
    os.replace(tmp, out / "scores.csv")
    print(f"[{phase}] fitted on {len(y)} images ({device}, seed {seed}), scored {len(x_in)} inputs "
          f"in {time.perf_counter() - started:.1f} s; wrote {out / 'scores.csv'}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fit model.py and score the inputs for out-of-distribution-ness.")
    parser.add_argument("--phase", choices=["val", "test"], required=True)
    parser.add_argument("--data", type=Path, required=True, help="public data dir (train.csv, val_inputs.csv)")
    parser.add_argument("--test-inputs", type=Path, help="dir with test_inputs.csv (test phase only)")
    parser.add_argument("--out", type=Path, required=True, help="where scores.csv is written")
    parser.add_argument("--seed", type=int, default=0, help="seeds python, numpy and torch before fitting")
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
