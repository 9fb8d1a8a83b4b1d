"""Individual treatment effects (ITE), shared by the tasks that estimate them (causality, causal_effect).

The driver side runs the agent's `estimate_ite(train, inputs, params)` once per replication and
writes `predictions.csv` (rep, unit, ite); the evaluator side checks that file against the hidden
true effects and scores it, each metric computed per replication and then averaged (IHDP practice):

  pehe          sqrt(mean((ite_hat - ite)^2))            the primary metric, lower is better
  ite_mae       mean(|ite_hat - ite|)
  ate_abs_error |mean(ite_hat) - mean(ite)|
"""

from __future__ import annotations

import time
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd

from .cli import DriverArgs
from .data import read_table
from .errors import DriverError, InvalidPredictions
from .outputs import write_predictions
from .predictions import integer_column, match_ids, read_predictions
from .returned import as_vector
from .seeding import seed_everything

KEYS = ["rep", "unit"]
LABEL_FILES = {"val": "val_ite.csv", "test": "test_ite.csv"}


def check_effects(raw: object, n_rows: int, rep: int) -> np.ndarray:
    """One finite float per input row, in input order; anything else is a clear error, not a silent fix."""
    values = as_vector(raw, n_rows, f"replication {rep}: estimate_ite", "effect")
    bad = int((~np.isfinite(values)).sum())
    if bad:
        raise DriverError(f"replication {rep}: estimate_ite returned {bad} non-finite values (NaN or inf)")
    return values


def run_replications(args: DriverArgs, model: ModuleType, params: dict, seed: int, seed_per_replication: bool) -> Path:
    """Fit and predict each replication with the agent's module; write predictions.csv and return its path.

    Before each replication the global RNGs are seeded with `seed`, or with `seed + rep` (also passed
    as params["seed"], for model code's own generators) when `seed_per_replication`."""
    if not callable(getattr(model, "estimate_ite", None)):
        raise DriverError("model.py must define estimate_ite(train, inputs, params) -> array of effects")
    train = read_table(args.data / "train.csv", KEYS + ["t", "y"])
    covariates = [c for c in train.columns if c not in KEYS + ["t", "y"]]
    inputs = read_table(args.inputs, KEYS + covariates)
    frames = []
    started = time.perf_counter()
    for rep in sorted(inputs["rep"].unique()):
        rep_train = train[train["rep"] == rep].set_index("unit")[covariates + ["t", "y"]]
        rep_inputs = inputs[inputs["rep"] == rep].set_index("unit")[covariates]
        if rep_train.empty:
            raise DriverError(f"replication {rep} has inputs but no training rows")
        rep_seed = seed + int(rep) if seed_per_replication else seed
        seed_everything(rep_seed)  # agent code that draws from the global RNGs stays reproducible
        rep_params = {**params, "seed": rep_seed} if seed_per_replication else dict(params)
        t0 = time.perf_counter()
        effects = check_effects(model.estimate_ite(rep_train.copy(), rep_inputs.copy(), rep_params),
                                len(rep_inputs), int(rep))
        frames.append(pd.DataFrame({"rep": int(rep), "unit": rep_inputs.index.to_numpy(), "ite": effects}))
        print(f"[{args.phase}] replication {rep}: {len(rep_train)} train rows, {len(rep_inputs)} inputs, "
              f"{time.perf_counter() - t0:.2f} s", flush=True)
    path = write_predictions(args.out, pd.concat(frames, ignore_index=True))
    print(f"[{args.phase}] wrote {path} for {len(frames)} replications "
          f"in {time.perf_counter() - started:.1f} s", flush=True)
    return path


def load_effects(path: Path) -> pd.DataFrame:
    """predictions.csv as integer (rep, unit) keys and float ite (NaN kept: `align_effects` rejects it)."""
    frame = read_predictions(path, KEYS + ["ite"])
    for col in KEYS:
        frame[col] = integer_column(frame, col, path.name)
    ite = pd.to_numeric(frame["ite"], errors="coerce")
    if ite.isna().sum() > frame["ite"].isna().sum():
        raise InvalidPredictions(f"{path.name}: column ite holds values that are not numbers")
    frame["ite"] = ite.astype(float)
    return frame


def align_effects(pred: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Exactly one finite prediction (ite_pred) for every labelled (rep, unit) (ite_true) and nothing else."""
    merged = match_ids(pred, labels, KEYS)
    bad = ~np.isfinite(merged["ite_pred"].to_numpy())
    if bad.any():
        rep, unit = merged.loc[bad, KEYS].iloc[0]
        raise InvalidPredictions(f"{int(bad.sum())} predictions are NaN or infinite, e.g. rep {rep} unit {unit}")
    return merged


def pehe_scores(merged: pd.DataFrame) -> dict[str, float]:
    """pehe, ite_mae and ate_abs_error, each per replication, then averaged over replications."""
    per_rep = []
    for _, group in merged.groupby("rep", sort=True):
        err = group["ite_pred"].to_numpy() - group["ite_true"].to_numpy()
        per_rep.append((np.sqrt(np.mean(err ** 2)), np.mean(np.abs(err)), abs(np.mean(err))))
    pehe, mae, ate = np.mean(per_rep, axis=0)
    return {"pehe": float(pehe), "ite_mae": float(mae), "ate_abs_error": float(ate)}


def evaluate_effects(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    """The evaluator of an ITE task: `<predictions_dir>/predictions.csv` scored against `<labels_dir>`."""
    labels = pd.read_csv(labels_dir / LABEL_FILES[phase]).rename(columns={"ite": "ite_true"})
    pred = load_effects(predictions_dir / "predictions.csv").rename(columns={"ite": "ite_pred"})
    return pehe_scores(align_effects(pred, labels))


TABLE_PLACES = {"train": "public/train.csv", "val_inputs": "public/val_inputs.csv",
                "test_inputs": "test_inputs/test_inputs.csv", "val_ite": "labels/val_ite.csv",
                "test_ite": "labels/test_ite.csv"}


def write_replication_tables(out: Path, tables: dict[str, list[pd.DataFrame]], float_format: str) -> None:
    """prepare.py's last step: each table's per-replication frames, concatenated and sorted by
    (rep, unit), written to its place under the task's workspace folder with a fixed float format
    (so a re-run writes the same bytes)."""
    for name, rel in TABLE_PLACES.items():
        frame = pd.concat(tables[name], ignore_index=True).sort_values(KEYS, kind="stable")
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(path, index=False, float_format=float_format, lineterminator="\n")
