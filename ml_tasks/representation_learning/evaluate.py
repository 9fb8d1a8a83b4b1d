"""Score the representation_learning task: a linear probe trained by the harness on the embeddings.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it. Reads only
`<predictions-dir>/embeddings.csv` (set, id, e0..e{d-1}): one row per probe-training input
(set `probe_train`) and per scored input (set `val` or `test`, matching --phase), d <= 32, finite,
|value| <= 1e6. Anything else prints one line to stderr and exits 1 without writing metrics.

The probe: each embedding column is standardised with the probe-training rows' mean and sd, then
scikit-learn's LogisticRegression (L2, C = 1.0, lbfgs, max_iter 2000) is fit on the probe-training
rows and their hidden labels (200 images, 20 per class), and predicts the scored rows.
  probe_accuracy      accuracy on the scored rows                 primary, higher is better
  probe_train_accuracy  accuracy on the probe's own training rows (how separable the classes are)
  knn_accuracy        5-nearest-neighbour accuracy (cosine) from the probe-training rows, for reference
Id matching and the command line come from the harness's `task_runtime` package.
"""

from __future__ import annotations

import os
import platform
import sys
import warnings
from pathlib import Path

# The probe's solver gives the same bits on every x86-64 machine: OpenBLAS (numpy's and scipy's)
# picks its kernels by CPU and thread count, and reads these variables when it loads.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
if platform.machine().lower() in ("x86_64", "amd64"):
    os.environ["OPENBLAS_CORETYPE"] = "Prescott"  # the plain SSE3 kernels every x86-64 CPU runs

import numpy as np  # noqa: E402  (after the variables above)
import pandas as pd  # noqa: E402

from task_runtime import InvalidPredictions, evaluator_main, match_ids  # noqa: E402

MAX_DIM = 32
MAX_ABS = 1e6
LABEL_FILES = {"probe_train": "probe_train_labels.csv", "val": "val_labels.csv", "test": "test_labels.csv"}


def load_embeddings(path: Path, phase: str) -> dict[str, pd.DataFrame]:
    if not path.is_file():
        raise InvalidPredictions(f"{path.name} was not written")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidPredictions(f"{path.name} is not a readable CSV: {str(exc).splitlines()[0][:200]}") from None
    dims = [c for c in frame.columns if c not in ("set", "id")]
    if "set" not in frame.columns or "id" not in frame.columns:
        raise InvalidPredictions(f"{path.name} needs columns set, id, e0..e<d-1>")
    if dims != [f"e{j}" for j in range(len(dims))] or not 1 <= len(dims) <= MAX_DIM:
        raise InvalidPredictions(f"{path.name}: embedding columns must be e0..e<d-1> with 1 <= d <= {MAX_DIM}")
    values = frame[dims].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    if not np.isfinite(values).all():
        raise InvalidPredictions(f"{path.name}: embeddings must be finite numbers")
    if np.abs(values).max() > MAX_ABS:
        raise InvalidPredictions(f"{path.name}: embedding values must lie within +-{MAX_ABS:g}")
    ids = pd.to_numeric(frame["id"], errors="coerce").to_numpy(dtype=float)
    if not np.isfinite(ids).all() or not np.array_equal(ids, np.round(ids)):
        raise InvalidPredictions(f"{path.name}: column id must hold integers")
    unknown = sorted(set(frame["set"]) - {"probe_train", phase})
    if unknown:
        raise InvalidPredictions(f"{path.name}: unexpected set {unknown[0][:40]!r} (expected probe_train and {phase})")
    table = pd.DataFrame(values, columns=dims).assign(set=frame["set"].to_numpy(), id=ids.astype(np.int64))
    return {name: table[table["set"] == name].drop(columns="set") for name in ("probe_train", phase)}


def aligned(rows: pd.DataFrame, labels: pd.DataFrame, name: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        merged = match_ids(rows, labels, ["id"])
    except InvalidPredictions as exc:
        raise InvalidPredictions(f"{name}: {exc}") from None
    return merged.drop(columns=["id", "y"]).to_numpy(dtype=float), merged["y"].to_numpy()


def probe(x_train: np.ndarray, y_train: np.ndarray, x_eval: np.ndarray, y_eval: np.ndarray) -> dict[str, float]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier

    mean, sd = x_train.mean(axis=0), x_train.std(axis=0)
    sd = np.where(sd > 1e-12 * np.maximum(1.0, np.abs(mean)), sd, 1.0)  # constant columns carry nothing
    z_train, z_eval = (x_train - mean) / sd, (x_eval - mean) / sd
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings on degenerate embeddings are not errors
        model = LogisticRegression(C=1.0, max_iter=2000).fit(z_train, y_train)
        knn = KNeighborsClassifier(n_neighbors=5, metric="cosine").fit(z_train, y_train)
    return {"probe_accuracy": float((model.predict(z_eval) == y_eval).mean()),
            "probe_train_accuracy": float((model.predict(z_train) == y_train).mean()),
            "knn_accuracy": float((knn.predict(z_eval) == y_eval).mean())}


def evaluate(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    sets = load_embeddings(predictions_dir / "embeddings.csv", phase)
    x_train, y_train = aligned(sets["probe_train"], pd.read_csv(labels_dir / LABEL_FILES["probe_train"]), "probe_train")
    x_eval, y_eval = aligned(sets[phase], pd.read_csv(labels_dir / LABEL_FILES[phase]), phase)
    return probe(x_train, y_train, x_eval, y_eval)


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Train and score the linear probe on the embeddings.", argv)


if __name__ == "__main__":
    sys.exit(main())
