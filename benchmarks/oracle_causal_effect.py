"""causal_effect's 1.0: each replication's true terms, their coefficients fitted on the training units.

    python benchmarks/oracle_causal_effect.py [--search]

The generator (ml_tasks/causal_effect/prepare.py) is known: per replication, y = mu0(x) + t tau(x) + noise
of sd 1, where mu0 and tau are sparse sums of terms from the family the description documents (a
covariate, a pairwise product, a step, sin or exp of a sparse projection). Their true values score PEHE 0,
but no estimator gets them: the noise of 600 training units stands between the data and any coefficient.
The oracle knows what no estimator is told, each draw's terms (which covariates, thresholds and
projections; prepare.py's `draw_replication` hands them out on request), and fits the model they span,
y ~ 1 + mu0's terms + t + t x tau's terms, by least squares on the training units, as an estimator that
had found the structure would; its effect is the fitted t-part. The oracle is the limit a search over
the family approaches when it finds each draw's terms: with 600 units nearly every true term moves the
residual sum of squares by far more than noise does (the script prints how much), so finding them is mostly
a search problem, not a statistical one.

`--search` also measures an estimator that sees only the public data (train.csv and the inputs): a
sparse search over the documented family (forward selection with swaps over covariates, pairwise
products, steps on a fine threshold grid and sin / exp of sparse projections at the documented scales,
at most 7 control terms and 4 effect terms, a term entering when it lowers the residual sum of squares by
more than the largest of its candidates would by chance at the documented noise sd 1), and prints, per
replication, its training residual sum of squares and its criterion (that RSS plus each term's entry
threshold) beside the true terms' (whose sin terms have a fixed phase: one column where the search's have
two). Where the true terms' criterion is the lower, the search fell short of the optimum of its own
criterion, which a public-data estimator can reach: a search problem, not a statistical one. Each
replication takes about a CPU-minute; the oracle alone takes seconds.
"""

from __future__ import annotations

import argparse
import importlib.util
import time

import numpy as np
import pandas as pd

from oracle_common import conclude, evaluate, prepared, report

TASK = "causal_effect"


def generator(task):
    spec = importlib.util.spec_from_file_location("ce_prepare", task.spec.task_dir / "prepare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def replay(gen) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, list[dict]]:
    """prepare.py's draws in prepare.py's order: covariates, splits, unit ids and each replication's terms."""
    cov_seq, split_seq, id_seq, *rep_seqs = np.random.SeedSequence(gen.SURFACE_ENTROPY).spawn(3 + gen.N_REPLICATIONS)
    x = gen.simulate_covariates(np.random.default_rng(cov_seq))
    splits = gen.split_units(np.random.default_rng(split_seq))
    unit_id = np.random.default_rng(id_seq).permutation(gen.N_UNITS)
    reps = []
    for seq in rep_seqs:
        terms: dict[str, list] = {"mu0": [], "tau": []}
        t, y, tau = gen.draw_replication(np.random.default_rng(seq), x, terms)
        reps.append({"t": t, "y": y, "tau": tau, "terms": terms})
    return x, splits, unit_id, reps


def true_terms_fit(x_terms: dict[str, list], t: np.ndarray, y: np.ndarray, train: np.ndarray):
    """Least squares of y on 1, mu0's terms, t and t x tau's terms over the training units: the effect on every
    unit, the training RSS, the number of columns and, per true term, how much the RSS rises without it."""
    m = np.column_stack([v for _, v in x_terms["mu0"]]) if x_terms["mu0"] else np.zeros((len(t), 0))
    e = np.column_stack([v for _, v in x_terms["tau"]]) if x_terms["tau"] else np.zeros((len(t), 0))
    design = np.column_stack([np.ones(len(t)), m, t, t[:, None] * e])
    k = 1 + m.shape[1]

    def rss_of(columns: np.ndarray) -> float:
        coef, *_ = np.linalg.lstsq(columns, y[train], rcond=None)
        return float(np.sum((y[train] - columns @ coef) ** 2))

    beta, *_ = np.linalg.lstsq(design[train], y[train], rcond=None)
    rss = rss_of(design[train])
    terms = [i for i in range(design.shape[1]) if i not in (0, k)]
    worth = [rss_of(np.delete(design[train], i, axis=1)) - rss for i in terms]
    return beta[k] + e @ beta[k + 1:], rss, design.shape[1], worth


# -- the search over the documented family (public data only) --------------------------------------------------

def _gain(q: np.ndarray, r: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Drop in the residual sum of squares from adding each column of v to the design spanned by q."""
    vp = v - q @ (q.T @ v)
    norm = np.einsum("ij,ij->j", vp, vp)
    return np.where(norm > 1e-8 * len(r), (r @ vp) ** 2 / np.maximum(norm, 1e-12), 0.0)


class FamilySearch:
    """y = a + sum_k b_k f_k(x) + t (c + sum_l g_l h_l(x)) + noise, the f and h drawn from the documented family."""

    SCALES = {"sin": (1.0, 1.5, 2.0, 2.5), "exp": (0.4, 0.6, 0.8)}  # a in sin(a z + b) and exp(a z)
    MAX_TERMS = {"mu": 7, "tau": 4}

    def __init__(self, x: np.ndarray, t: np.ndarray, y: np.ndarray, n_continuous: int, angles: int = 24):
        from scipy.optimize import minimize

        self.minimize = minimize
        self.x, self.t, self.y = x, t.astype(float), y
        self.d = x.shape[1]
        self.xm, sd = x.mean(0), x.std(0)
        self.xs = np.where(sd > 0, sd, 1.0)
        self.z = (x - self.xm) / self.xs
        specs: list[tuple] = [("lin", j) for j in range(self.d)]
        specs += [("int", j, k) for j in range(self.d) for k in range(j + 1, self.d)]
        for j in range(n_continuous):  # steps at every 1% quantile between the 15% and 85% ones
            specs += [("step", j, float(c)) for c in np.unique(np.quantile(x[:, j], np.arange(0.15, 0.8501, 0.01)))]
        self.specs = specs
        self.dictionary = np.column_stack([self.column(s, x) for s in specs])
        self.pairs = [(j, k) for j in range(self.d) for k in range(j + 1, self.d)]
        self.angles = angles
        n_proj = len(self.pairs) * angles * 2 * sum(len(v) for v in self.SCALES.values())
        # a chi-square(1) maximum over the candidates at noise sd 1, plus 2
        self.threshold = {"dict": 2 * np.log(2 * len(specs)) + 2, "proj": 2 * np.log(n_proj) + 2}

    def column(self, spec: tuple, x: np.ndarray) -> np.ndarray:
        kind = spec[0]
        if kind == "lin":
            return x[:, spec[1]].astype(float)
        if kind == "int":
            return x[:, spec[1]] * x[:, spec[2]]
        if kind == "step":
            return (x[:, spec[1]] > spec[2]).astype(float)
        proj = ((x - self.xm) / self.xs)[:, list(spec[1])] @ spec[2]
        if kind == "sin":  # sin(a z + b) spans sin(a z) and cos(a z)
            return np.column_stack([np.sin(proj), np.cos(proj)])
        return np.exp(proj - spec[3])

    def design(self, terms: list, x: np.ndarray, t: np.ndarray) -> np.ndarray:
        cols = [np.ones((len(x), 1)), t[:, None]]
        for part, spec in terms:
            v = self.column(spec, x).reshape(len(x), -1)
            cols.append(v if part == "mu" else t[:, None] * v)
        return np.column_stack(cols)

    def fit(self, terms: list) -> tuple[np.ndarray, np.ndarray, float]:
        design = self.design(terms, self.x, self.t)
        beta, *_ = np.linalg.lstsq(design, self.y, rcond=None)
        r = self.y - design @ beta
        return design, beta, float(r @ r)

    def _u(self, kind: str, idx: tuple, p: np.ndarray) -> np.ndarray:
        """Projection weights from (direction, s): the projection's sd is a in the documented range."""
        lo, hi = self.SCALES[kind][0], self.SCALES[kind][-1]
        s = float(np.clip(p[-1], -30, 30))
        a = lo + (hi - lo) / (1 + np.exp(-s))
        sd = float(np.std(self.z[:, list(idx)] @ p[:-1]))
        return a * np.asarray(p[:-1]) / max(sd, 1e-9)

    def _proj_gain(self, q, r, kind, part, idx, u) -> float:
        proj = self.z[:, list(idx)] @ u
        v = np.column_stack([np.sin(proj), np.cos(proj)]) if kind == "sin" else np.exp(proj - proj.max())[:, None]
        if part == "tau":
            v = self.t[:, None] * v
        vp = v - q @ (q.T @ v)
        coef, *_ = np.linalg.lstsq(vp, r, rcond=None)
        res = r - vp @ coef
        return float(r @ r - res @ res)

    def best_projection(self, q, r, parts):
        """Pairs x angles x scales on a grid, then the best refined by Nelder-Mead, with a third covariate if it helps."""
        best = (0.0, None)
        for kind in ("sin", "exp"):
            theta = np.linspace(0, np.pi if kind == "sin" else 2 * np.pi, self.angles, endpoint=False)
            dirs = np.column_stack([np.cos(theta), np.sin(theta)])
            for part in parts:
                w = np.ones(len(r)) if part == "mu" else self.t
                for j, k in self.pairs:
                    zz = self.z[:, [j, k]] @ dirs.T
                    zz = zz / zz.std(0)
                    for a in self.SCALES[kind]:
                        if kind == "sin":
                            sp = w[:, None] * np.sin(a * zz)
                            cp = w[:, None] * np.cos(a * zz)
                            sp, cp = sp - q @ (q.T @ sp), cp - q @ (q.T @ cp)
                            ss, cc, sc = (sp * sp).sum(0), (cp * cp).sum(0), (sp * cp).sum(0)
                            rs, rc = r @ sp, r @ cp
                            gain = (cc * rs ** 2 - 2 * sc * rs * rc + ss * rc ** 2) / np.maximum(ss * cc - sc ** 2, 1e-12)
                        else:
                            gain = _gain(q, r, w[:, None] * np.exp(a * zz))
                        i = int(np.argmax(gain))
                        if gain[i] > best[0]:
                            best = (float(gain[i]), (kind, part, (j, k), a * dirs[i] / np.std(self.z[:, [j, k]] @ dirs[i])))
        if best[1] is None:
            return best
        kind, part, idx, u = best[1]
        lo, hi = self.SCALES[kind][0], self.SCALES[kind][-1]
        a0 = float(np.std(self.z[:, list(idx)] @ u))
        frac = float(np.clip((a0 - lo) / (hi - lo), 0.02, 0.98))
        p0 = np.append(u / a0, np.log(frac / (1 - frac)))
        loss = lambda p, ii: -self._proj_gain(q, r, kind, part, ii, self._u(kind, ii, p))  # noqa: E731
        found = (best[0], tuple(idx), p0)
        o = self.minimize(loss, p0, args=(found[1],), method="Nelder-Mead", options={"maxiter": 300, "xatol": 1e-3, "fatol": 1e-3})
        if -o.fun > found[0]:
            found = (-o.fun, found[1], o.x)
        pair = found
        for m in range(self.d):
            if m in pair[1]:
                continue
            ii = pair[1] + (m,)
            for s0 in (0.3, -0.3):
                p1 = np.concatenate([pair[2][:-1], [s0 * np.linalg.norm(pair[2][:-1])], pair[2][-1:]])
                o = self.minimize(loss, p1, args=(ii,), method="Nelder-Mead",
                                  options={"maxiter": 200, "xatol": 1e-3, "fatol": 1e-3})
                if -o.fun > found[0] + 4.0:
                    found = (-o.fun, ii, o.x)
        gain, ii, p = found
        u = self._u(kind, ii, p)
        shift = float((self.z[:, list(ii)] @ u).max()) if kind == "exp" else 0.0
        return gain, (part, (kind, ii, u, shift))

    def best_candidate(self, terms: list):
        """(term, its drop in RSS, that drop less its threshold, the RSS without it) of the best term to add."""
        design, beta, rss = self.fit(terms)
        q, _ = np.linalg.qr(design)
        r = self.y - design @ beta
        parts = [p for p in ("mu", "tau") if sum(part == p for part, _ in terms) < self.MAX_TERMS[p]]
        if not parts:
            return None, 0.0, 0.0, rss
        best_dict = (0.0, None)
        for part in parts:
            gain = _gain(q, r, self.dictionary if part == "mu" else self.t[:, None] * self.dictionary)
            i = int(np.argmax(gain))
            if gain[i] > best_dict[0]:
                best_dict = (float(gain[i]), (part, self.specs[i]))
        best_proj = self.best_projection(q, r, parts)
        scored = [(best_dict[0] - self.threshold["dict"], best_dict), (best_proj[0] - self.threshold["proj"], best_proj)]
        margin, (gain, term) = max(scored, key=lambda s: s[0])
        return term, gain, margin, rss

    def run(self, passes: int = 3) -> "FamilySearch":
        """Forward selection; then passes that drop a term that no longer pays, swap each term for the best
        candidate given the others when that lowers the RSS, and add while a candidate pays."""
        terms: list = []
        for _ in range(passes + 1):
            changed = False
            i = 0
            while terms and i < len(terms):
                others = terms[:i] + terms[i + 1:]
                rss_full = self.fit(terms)[2]
                term, gain, margin, rss_without = self.best_candidate(others)
                kind = "dict" if terms[i][1][0] in ("lin", "int", "step") else "proj"
                if margin <= 0 and rss_without - rss_full < self.threshold[kind]:
                    terms, changed = others, True
                    continue
                if term is not None and rss_without - gain < rss_full - 1.0:
                    terms, changed = others[:i] + [term] + others[i:], True
                i += 1
            while True:
                term, _, margin, _ = self.best_candidate(terms)
                if term is None or margin <= 0:
                    break
                terms, changed = terms + [term], True
            if not changed:
                break
        self.terms = terms
        _, self.beta, self.rss = self.fit(terms)
        return self

    def criterion(self, rss: float, kinds: list[str]) -> float:
        """What the search minimises: the training RSS plus, per term, the threshold it had to beat to enter."""
        return rss + sum(self.threshold["dict" if k in ("lin", "int", "step", "linear", "interaction") else "proj"]
                         for k in kinds)

    def effect(self, x: np.ndarray) -> np.ndarray:
        return (self.design(self.terms, x, np.ones(len(x))) - self.design(self.terms, x, np.zeros(len(x)))) @ self.beta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--search", action="store_true", help="also measure the sparse search over the family")
    args = parser.parse_args(argv)
    task = prepared(TASK)
    gen = generator(task)
    x, splits, unit_id, reps = replay(gen)
    covariates = list(gen.COLUMNS)
    public = pd.read_csv(task.public_dir / "train.csv")
    inputs = {"val": pd.read_csv(task.public_dir / "val_inputs.csv"),
              "test": pd.read_csv(task.test_inputs_dir / "test_inputs.csv")}
    position = {int(u): i for i, u in enumerate(unit_id)}  # unit id -> row of x
    train = splits["train"]
    for rep, draw in enumerate(reps):  # the replay is prepare.py's draw: the same outcomes as train.csv
        rows = public[public["rep"] == rep]
        idx = np.array([position[int(u)] for u in rows["unit"]])
        assert np.allclose(rows["y"].to_numpy(), draw["y"][idx], rtol=1e-8, atol=1e-8), "the replay disagrees"
        assert np.array_equal(rows["t"].to_numpy(), draw["t"][idx]), "the replay disagrees"

    def write(effects: dict[tuple[int, int], float], phase: str):
        frame = inputs[phase][["rep", "unit"]].copy()
        frame["ite"] = [effects[(int(r), int(u))] for r, u in zip(frame["rep"], frame["unit"])]
        return lambda out: frame.to_csv(out / "predictions.csv", index=False)

    results = {}
    effects, rss_true, worth = {}, [], []
    for rep, draw in enumerate(reps):
        tau_hat, rss, k, rises = true_terms_fit(draw["terms"], draw["t"].astype(float), draw["y"], train)
        worth += rises
        rss_true.append((rss, k, [kind for part in ("mu0", "tau") for kind, _ in draw["terms"][part]]))
        effects.update({(rep, int(unit_id[i])): float(tau_hat[i]) for i in range(gen.N_UNITS)})
    name = "the true terms of each draw, coefficients by least squares on the training units"
    results[name] = {phase: evaluate(task, phase, write(effects, phase)) for phase in ("val", "test")}
    report(task, name, results[name]["val"], results[name]["test"])
    worth = np.array(worth)
    print(f"  the {len(worth)} true terms: the training RSS rises by a median of {np.median(worth):.1f} without one "
          f"(the chance maximum over a search's candidates at noise sd 1 is about 17-24); {int(np.sum(worth < 1e-6))} add "
          f"nothing (a covariate drawn twice), {int(np.sum((worth >= 1e-6) & (worth < 35)))} add 1-35 "
          f"({', '.join(f'{w:.1f}' for w in np.sort(worth[(worth >= 1e-6) & (worth < 35)]))})", flush=True)

    if args.search:
        effects = {}
        for rep in range(gen.N_REPLICATIONS):
            start = time.process_time()
            rows = public[public["rep"] == rep]
            fit = FamilySearch(rows[covariates].to_numpy(dtype=float), rows["t"].to_numpy(), rows["y"].to_numpy(dtype=float),
                               gen.N_CONTINUOUS).run()
            for phase, frame in inputs.items():
                part = frame[frame["rep"] == rep]
                effects.update(zip(zip(part["rep"].astype(int), part["unit"].astype(int)),
                                   fit.effect(part[covariates].to_numpy(dtype=float)).tolist()))
            n_mu = sum(p == "mu" for p, _ in fit.terms)
            rss, columns, kinds = rss_true[rep]
            print(f"  rep {rep}: search {n_mu} control + {len(fit.terms) - n_mu} effect terms, "
                  f"{fit.design(fit.terms, fit.x, fit.t).shape[1]} columns, training RSS {fit.rss:.1f}, criterion "
                  f"{fit.criterion(fit.rss, [spec[0] for _, spec in fit.terms]):.1f}; true terms {columns} columns, RSS "
                  f"{rss:.1f}, criterion {fit.criterion(rss, kinds):.1f} ({time.process_time() - start:.0f} CPU-s)", flush=True)
        name = "sparse search over the documented family (public data only)"
        results[name] = {phase: evaluate(task, phase, write(effects, phase)) for phase in ("val", "test")}
        report(task, name, results[name]["val"], results[name]["test"])

    metric = task.spec.metric.name
    best = min(results, key=lambda n: results[n]["val"][metric])
    conclude(task, best, results[best]["val"], results[best]["test"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
