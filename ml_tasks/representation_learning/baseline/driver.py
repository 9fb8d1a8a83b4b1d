"""Harness-owned driver of the representation_learning task: pretrain, then embed the probe's inputs.

    python driver.py --phase val  --data <public> --out <output> [--seed N]
    python driver.py --phase test --data <public> --test-inputs <dir> --out <output> [--seed N]

The harness restores this file before every run. It hands the editable `encoder.pretrain` only the
unlabeled images, then calls `encoder.embed` on the probe's training inputs and on the inputs to
score (validation inputs in experiments, hidden test inputs in the final run), checks the
embeddings (one finite row of at most MAX_DIM numbers per input, the same width for both sets) and
writes `<out>/embeddings.csv` (set, id, e0..e{d-1}). The linear probe is trained and scored by the
task's evaluator, on labels no agent code ever sees. Nothing printed here is parsed as a metric.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

# Same bits on every x86-64 machine. Tiny rounding differences grow through training into different
# encoders, and the kernels numpy and torch pick depend on the CPU: torch's own vectorised kernels
# (AVX2 or AVX-512), oneDNN's convolutions and MKL's matrix products (each per instruction set and
# vendor). A baseline scored 0.8067 here and 0.8233 on another machine at one thread. These variables
# are read when the libraries load, so they are set before numpy and torch are imported; the rest
# (no oneDNN, no NNPACK: their kernels differ by CPU too) is in portable_torch().
PORTABLE_X86 = {"ATEN_CPU_CAPABILITY": "default",  # torch's portable kernels, not AVX2 or AVX-512
                "MKL_CBWR": "COMPATIBLE,STRICT",  # MKL's conditional numerical reproducibility, any x86-64
                "ONEDNN_MAX_CPU_ISA": "SSE41"}  # should agent code turn oneDNN back on
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
os.environ.update(ONE_THREAD)
if platform.machine().lower() in ("x86_64", "amd64"):
    os.environ.update(PORTABLE_X86)

import numpy as np  # noqa: E402  (after the variables above)

HERE = Path(__file__).resolve().parent
MAX_DIM = 32  # the largest embedding the probe accepts
MAX_ABS = 1e6  # larger magnitudes are rejected: they only serve to break the probe's solver


class DriverError(Exception):
    """A problem with the inputs or with what encoder.py returned: reported as one line, exit 1."""


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


def read_npz(path: Path, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise DriverError(f"expected data file {path} does not exist")
    with np.load(path, allow_pickle=False) as data:
        missing = [k for k in keys if k not in data.files]
        if missing:
            raise DriverError(f"{path.name} lacks arrays {missing}")
        return {k: data[k] for k in keys}


def pick_device() -> str:
    """CUDA when a GPU is visible to this job, else CPU."""
    import torch

    return "cuda" if os.environ.get("CUDA_VISIBLE_DEVICES", "").strip() and torch.cuda.is_available() else "cpu"


def portable_torch() -> None:
    """One thread and torch's own convolution (im2col + MKL), whose results the variables above pin."""
    import torch

    torch.set_num_threads(1)
    torch.backends.mkldnn.enabled = False
    torch.backends.nnpack.enabled = False


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    import torch

    torch.manual_seed(seed)


def check_embeddings(raw: object, n: int, where: str) -> np.ndarray:
    if hasattr(raw, "detach"):
        raw = raw.detach().cpu().numpy()
    try:
        values = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DriverError(f"embed must return numbers for the {where} ({exc})") from None
    if values.ndim != 2 or values.shape[0] != n or not 1 <= values.shape[1] <= MAX_DIM:
        raise DriverError(f"embed returned shape {values.shape} for the {where}; expected ({n}, d) with 1 <= d <= {MAX_DIM}")
    if not np.isfinite(values).all():
        raise DriverError(f"embed returned non-finite values (NaN or inf) for the {where}")
    if np.abs(values).max() > MAX_ABS:
        raise DriverError(f"embed returned values beyond +-{MAX_ABS:g} for the {where}")
    return values


def write_embeddings(out: Path, sets: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    dim = next(iter(sets.values()))[1].shape[1]
    lines = ["set,id," + ",".join(f"e{j}" for j in range(dim))]
    for name, (ids, values) in sets.items():
        lines += [f"{name},{i}," + ",".join(f"{v:.7g}" for v in row) for i, row in zip(ids.tolist(), values)]
    tmp = out / ".embeddings.csv.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, out / "embeddings.csv")


def run(phase: str, data: Path, inputs_path: Path, out: Path, seed: int) -> int:
    portable_torch()
    sys.path.insert(0, str(HERE))
    import encoder  # the agent-editable module, next to this driver

    for name in ("pretrain", "embed"):
        if not callable(getattr(encoder, name, None)):
            raise DriverError(f"encoder.py must define {name} (see the description)")
    params = read_params(HERE / "params.json")
    unlabeled = read_npz(data / "unlabeled.npz", ("x",))["x"]
    probe_train = read_npz(data / "probe_train_inputs.npz", ("id", "x"))
    scored = read_npz(inputs_path, ("id", "x"))
    device = pick_device()
    seed_everything(seed)
    started = time.perf_counter()
    model = encoder.pretrain(unlabeled.copy(), dict(params), device)
    print(f"[{phase}] pretrained on {len(unlabeled)} unlabeled images in {time.perf_counter() - started:.1f} s",
          flush=True)
    train_emb = check_embeddings(encoder.embed(model, probe_train["x"].copy(), dict(params), device),
                                 len(probe_train["id"]), "probe's training inputs")
    scored_emb = check_embeddings(encoder.embed(model, scored["x"].copy(), dict(params), device),
                                  len(scored["id"]), f"{phase} inputs")
    if train_emb.shape[1] != scored_emb.shape[1]:
        raise DriverError(f"embed returned width {train_emb.shape[1]} for the probe's training inputs but "
                          f"{scored_emb.shape[1]} for the {phase} inputs")
    write_embeddings(out, {"probe_train": (probe_train["id"], train_emb), phase: (scored["id"], scored_emb)})
    print(f"[{phase}] wrote {train_emb.shape[1]}-dimensional embeddings in {time.perf_counter() - started:.1f} s",
          flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Pretrain encoder.py and embed the linear probe's inputs.")
    parser.add_argument("--phase", choices=["val", "test"], required=True)
    parser.add_argument("--data", type=Path, required=True, help="public data dir")
    parser.add_argument("--test-inputs", type=Path, help="dir with test_inputs.npz (test phase only)")
    parser.add_argument("--out", type=Path, required=True, help="where embeddings.csv is written")
    parser.add_argument("--seed", type=int, default=0, help="seeds the encoder's randomness")
    args = parser.parse_args(argv)
    if args.phase == "test" and args.test_inputs is None:
        parser.error("--phase test needs --test-inputs")
    inputs = args.data / "val_inputs.npz" if args.phase == "val" else args.test_inputs / "test_inputs.npz"
    try:
        return run(args.phase, args.data, inputs, args.out, args.seed)
    except DriverError as exc:
        print(f"driver error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
