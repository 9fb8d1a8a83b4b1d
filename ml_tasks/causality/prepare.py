"""Write the causality task's data into a workspace folder: IHDP covariates with Hill's surface B.

Run by `researchbench.benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/causality>

Everything comes from econml's bundled IHDP covariates (offline) and fixed seeds, so two runs write the
same bytes. Layout written under --out:

    public/train.csv             rep, unit, covariates, t, y      (agent-visible)
    public/val_inputs.csv        rep, unit, covariates            (agent-visible)
    test_inputs/test_inputs.csv  rep, unit, covariates            (final test phase only)
    labels/val_ite.csv           rep, unit, ite                   (evaluator only)
    labels/test_ite.csv          rep, unit, ite                   (evaluator only)

The replication seeds are 32-bit values drawn from a fixed SeedSequence rather than 0..9, so agent code
cannot regenerate the true effects by calling `ihdp_surface_B(random_state=k)` for small k.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime.datasets import prepare_main
from task_runtime.effects import write_replication_tables

N_REPLICATIONS = 10
REPLICATION_ENTROPY = 0x1BD9_C0A5_7E11  # fixed: changing it changes the task (bump the version)
SPLIT_SEED = 20240611
FRACTIONS = (0.6, 0.2, 0.2)  # train / val / test, stratified by treatment
FLOAT_FORMAT = "%.10g"  # fixed precision: the files are byte-identical across runs

# econml's column order in `_process_ihdp_sim_data` (after the intercept it prepends); '.' -> '_'.
COVARIATES = ["bw", "b_head", "preterm", "birth_o", "nnhealth", "momage", "sex", "twin", "b_marr",
              "mom_lths", "mom_hs", "mom_scoll", "cig", "first", "booze", "drugs", "work_dur", "prenatal",
              "site1", "site2", "site3", "site4", "site5", "site6", "site7"]
N_CONTINUOUS = 6  # bw .. momage are standardized; the rest are binary (first is 1/2)


def replication_seeds() -> list[int]:
    return [int(s) for s in np.random.SeedSequence(REPLICATION_ENTROPY).generate_state(N_REPLICATIONS)]


def split_units(treatment: np.ndarray) -> dict[str, np.ndarray]:
    """Seeded split of unit indices into train/val/test, stratified so each part has treated units."""
    rng = np.random.default_rng(SPLIT_SEED)
    parts: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": []}
    for arm in (0, 1):
        idx = rng.permutation(np.flatnonzero(treatment == arm))
        n_train = round(FRACTIONS[0] * len(idx))
        n_val = round(FRACTIONS[1] * len(idx))
        parts["train"].append(idx[:n_train])
        parts["val"].append(idx[n_train:n_train + n_val])
        parts["test"].append(idx[n_train + n_val:])
    return {name: np.sort(np.concatenate(chunks)) for name, chunks in parts.items()}


def load_replications() -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Covariates and treatment (fixed across replications) and (y, true ITE) per replication."""
    from econml.data.dgps import ihdp_surface_B

    covariates = treatment = None
    outcomes = []
    for seed in replication_seeds():
        y, t, x, ite = ihdp_surface_B(random_state=seed)
        x = np.asarray(x, dtype=float)[:, 1:]  # drop econml's intercept column
        if covariates is None:
            covariates, treatment = x, np.asarray(t, dtype=int)
        elif not (np.array_equal(covariates, x) and np.array_equal(treatment, t)):
            raise RuntimeError("econml returned different covariates across replications")
        outcomes.append((np.asarray(y, dtype=float).ravel(), np.asarray(ite, dtype=float).ravel()))
    assert covariates is not None and treatment is not None
    if covariates.shape[1] != len(COVARIATES):
        raise RuntimeError(f"expected {len(COVARIATES)} IHDP covariates, econml gave {covariates.shape[1]}")
    return covariates, treatment, outcomes


def covariate_frame(x: np.ndarray) -> pd.DataFrame:
    frame = pd.DataFrame(x, columns=COVARIATES)
    binary = COVARIATES[N_CONTINUOUS:]
    if not np.array_equal(frame[binary].to_numpy(), np.round(frame[binary].to_numpy())):
        raise RuntimeError("IHDP binary covariates are not integer-valued")
    frame[binary] = frame[binary].round().astype(int)
    return frame


def build(out: Path) -> None:
    covariates, treatment, outcomes = load_replications()
    n = len(treatment)
    # Unit ids are a seeded relabelling, so neither ids nor row order reveal the split or the source order.
    unit_id = np.random.default_rng(SPLIT_SEED + 1).permutation(n)
    splits = split_units(treatment)
    cov = covariate_frame(covariates)

    tables: dict[str, list[pd.DataFrame]] = {k: [] for k in ("train", "val_inputs", "test_inputs", "val_ite", "test_ite")}
    for rep, (y, ite) in enumerate(outcomes):
        for part, idx in splits.items():
            keys = pd.DataFrame({"rep": rep, "unit": unit_id[idx]})
            if part == "train":
                frame = pd.concat([keys, cov.iloc[idx].reset_index(drop=True)], axis=1)
                frame["t"] = treatment[idx]
                frame["y"] = y[idx]
                tables["train"].append(frame)
            else:
                tables[f"{part}_inputs"].append(pd.concat([keys, cov.iloc[idx].reset_index(drop=True)], axis=1))
                tables[f"{part}_ite"].append(keys.assign(ite=ite[idx]))

    write_replication_tables(out, tables, FLOAT_FORMAT)


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
