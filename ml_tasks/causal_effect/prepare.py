"""Write the causal_effect task's data: simulated covariates with hidden random response surfaces.

Run by `researchbench.benchmark.tasks.workspace.prepare` (never by agent code):

    python prepare.py --out <workspace/causal_effect>

The covariates (the same in every replication) are simulated: `N_CONTINUOUS` correlated Gaussians
(a random low-rank factor model, standardized) and `N_BINARY` binaries (thresholded latent Gaussians
correlated with the continuous ones). Each replication then draws its own data-generating process
from the family the description documents:

    mu0(x)  = a sparse sum of random terms (see `draw_surface`), rescaled to sd S_mu
    tau(x)  = m_tau + the same kind of sum, rescaled to sd S_tau          (the true effects)
    e(x)    = sigmoid(b0 + gamma * z(x)), z a standardized random sparse projection (confounding:
              it shares covariates with mu0 and tau)
    t ~ Bernoulli(e(x)),  y = mu0(x) + t * tau(x) + N(0, SIGMA^2)

All draws come from one 128-bit entropy (`SURFACE_ENTROPY`); it lives only in this file, which agent
code never sees, so the surfaces (which covariates, coefficients, thresholds) cannot be regenerated.
Two runs write the same bytes. Layout written under --out:

    public/train.csv             rep, unit, x0..x19, t, y     (agent-visible)
    public/val_inputs.csv        rep, unit, x0..x19           (agent-visible)
    test_inputs/test_inputs.csv  rep, unit, x0..x19           (final test phase only)
    labels/val_ite.csv           rep, unit, ite               (evaluator only)
    labels/test_ite.csv          rep, unit, ite               (evaluator only)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from task_runtime.datasets import prepare_main
from task_runtime.effects import write_replication_tables

# fixed: changing it changes the task (bump the version)
SURFACE_ENTROPY = 0x3A7F_52C1_E09B_4D68_B215_7C3E_91A4_0F5D
N_UNITS = 1000
N_CONTINUOUS = 12
N_BINARY = 8
N_REPLICATIONS = 8
FRACTIONS = (0.6, 0.2, 0.2)  # train / val / test
SIGMA = 1.0  # outcome noise sd
MU_SD = (1.5, 3.0)  # range of sd(mu0)
TAU_SD = (1.0, 2.0)  # range of sd(tau)
TAU_MEAN = (-1.0, 3.0)  # range of the mean effect
MU_TERMS = (4, 7)  # number of terms in mu0 (inclusive)
TAU_TERMS = (2, 4)  # number of terms in tau (inclusive)
PROPENSITY_GAMMA = (0.8, 1.5)  # confounding strength on the standardized projection
TREATED_SHARE = (0.25, 0.5)
TERM_KINDS = ("linear", "interaction", "step", "sin", "exp")
FLOAT_FORMAT = "%.10g"  # fixed precision: the files are byte-identical across runs

COLUMNS = [f"x{j}" for j in range(N_CONTINUOUS + N_BINARY)]


def simulate_covariates(rng: np.random.Generator) -> np.ndarray:
    """Correlated standardized Gaussians (3-factor model) and binaries thresholded from correlated latents."""
    n_latent = N_CONTINUOUS + N_BINARY
    loadings = rng.normal(0.0, 0.7, size=(n_latent, 3))
    latent = rng.normal(size=(N_UNITS, 3)) @ loadings.T + rng.normal(size=(N_UNITS, n_latent))
    cont = latent[:, :N_CONTINUOUS]
    cont = (cont - cont.mean(0)) / cont.std(0)
    lat_bin = latent[:, N_CONTINUOUS:]
    shares = rng.uniform(0.2, 0.8, size=N_BINARY)  # each binary's share of zeros
    thresholds = np.array([np.quantile(lat_bin[:, j], q) for j, q in enumerate(shares)])
    binary = (lat_bin > thresholds[None, :]).astype(float)
    return np.concatenate([cont, binary], axis=1)


def term(rng: np.random.Generator, kind: str, x: np.ndarray) -> np.ndarray:
    """One random term of the documented family, evaluated on every unit."""
    d = x.shape[1]
    if kind == "linear":
        return x[:, rng.integers(d)]
    if kind == "interaction":
        j, k = rng.choice(d, size=2, replace=False)
        return x[:, j] * x[:, k]
    if kind == "step":
        j = rng.integers(N_CONTINUOUS)  # thresholds on continuous covariates (a binary is its own step)
        return (x[:, j] > np.quantile(x[:, j], rng.uniform(0.15, 0.85))).astype(float)
    subset = rng.choice(d, size=rng.integers(2, 4), replace=False)
    proj = x[:, subset] @ rng.normal(size=len(subset))
    proj = (proj - proj.mean()) / proj.std()
    if kind == "sin":
        return np.sin(rng.uniform(1.0, 2.5) * proj + rng.uniform(0, 2 * np.pi))
    return np.exp(rng.uniform(0.4, 0.8) * proj)  # "exp"


def draw_surface(rng: np.random.Generator, x: np.ndarray, n_terms: tuple[int, int], sd: float,
                 record: list | None = None) -> np.ndarray:
    """A sparse random sum of terms with random signed coefficients, centred and rescaled to sd `sd`.

    `record`, when given, receives (kind, values) of every term that enters (benchmarks/oracle_causal_effect.py
    replays the draws to fit each surface's true terms); it draws nothing, so the data are the same."""
    k = rng.integers(n_terms[0], n_terms[1] + 1)
    total = np.zeros(len(x))
    for kind in rng.choice(TERM_KINDS, size=k):
        values = term(rng, str(kind), x)
        scale = values.std()
        if scale > 0:
            if record is not None:
                record.append((str(kind), values))
            total += rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 1.5) * (values - values.mean()) / scale
    if total.std() == 0:
        return total
    return total / total.std() * sd


def draw_replication(rng: np.random.Generator, x: np.ndarray,
                     terms: dict[str, list] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Treatment, factual outcome and true effect of every unit under one freshly drawn surface.

    `terms`, when given, receives the true terms of the control outcome ("mu0") and of the effect ("tau")."""
    terms = {"mu0": [], "tau": []} if terms is None else terms
    mu0 = draw_surface(rng, x, MU_TERMS, rng.uniform(*MU_SD), terms.setdefault("mu0", [])) + rng.normal(0, 2)
    tau = rng.uniform(*TAU_MEAN) + draw_surface(rng, x, TAU_TERMS, rng.uniform(*TAU_SD), terms.setdefault("tau", []))
    subset = rng.choice(x.shape[1], size=rng.integers(3, 6), replace=False)
    z = x[:, subset] @ rng.normal(size=len(subset))
    z = (z - z.mean()) / z.std()
    gamma = rng.uniform(*PROPENSITY_GAMMA)
    share = rng.uniform(*TREATED_SHARE)
    b0 = np.log(share / (1 - share))
    propensity = 1.0 / (1.0 + np.exp(-(b0 + gamma * z)))
    t = (rng.random(len(x)) < propensity).astype(int)
    y = mu0 + t * tau + rng.normal(0, SIGMA, size=len(x))
    return t, y, tau


def split_units(rng: np.random.Generator) -> dict[str, np.ndarray]:
    order = rng.permutation(N_UNITS)
    n_train, n_val = round(FRACTIONS[0] * N_UNITS), round(FRACTIONS[1] * N_UNITS)
    return {"train": np.sort(order[:n_train]), "val": np.sort(order[n_train:n_train + n_val]),
            "test": np.sort(order[n_train + n_val:])}


def build(out: Path) -> None:
    cov_seq, split_seq, id_seq, *rep_seqs = np.random.SeedSequence(SURFACE_ENTROPY).spawn(3 + N_REPLICATIONS)
    x = simulate_covariates(np.random.default_rng(cov_seq))
    splits = split_units(np.random.default_rng(split_seq))
    unit_id = np.random.default_rng(id_seq).permutation(N_UNITS)  # ids carry no split or order information
    cov = pd.DataFrame(x, columns=COLUMNS)
    cov[COLUMNS[N_CONTINUOUS:]] = cov[COLUMNS[N_CONTINUOUS:]].astype(int)

    tables: dict[str, list[pd.DataFrame]] = {k: [] for k in ("train", "val_inputs", "test_inputs", "val_ite", "test_ite")}
    for rep, seq in enumerate(rep_seqs):
        t, y, tau = draw_replication(np.random.default_rng(seq), x)
        for part, idx in splits.items():
            keys = pd.DataFrame({"rep": rep, "unit": unit_id[idx]})
            frame = pd.concat([keys, cov.iloc[idx].reset_index(drop=True)], axis=1)
            if part == "train":
                tables["train"].append(frame.assign(t=t[idx], y=y[idx]))
            else:
                tables[f"{part}_inputs"].append(frame)
                tables[f"{part}_ite"].append(keys.assign(ite=tau[idx]))

    write_replication_tables(out, tables, FLOAT_FORMAT)


def main(argv: list[str] | None = None) -> int:
    return prepare_main(build, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
