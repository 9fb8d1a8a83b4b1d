"""fairness's 1.0: the Bayes-optimal fair rule, the labels' true model with the score-optimal quotas.

    python benchmarks/oracle_fairness.py [--draws 11 12 13 14 15 16]

Since version 4.0.0 the labels are drawn from a known model (ml_tasks/fairness/prepare.py:
y ~ Bernoulli(p(x, a)); since 5.0.0 p is a hidden random mix of term kinds that the description does
not document), so the best rule for the metric is known: rank each group by its true probability p and
give positives to the top k0 of group 0 and the top k1 of group 1, (k0, k1) maximizing the expected
score under p (expected accuracy minus the evaluator's charge for the parity gap past its tolerance; the
reference's `decide`). No rule that
sees only the covariates has a higher expected score on a batch. It is scored here through the task's
own evaluator on the drawn val and test labels, as every submission is (the realised score, not the
expectation, is what the scale compares against; the expectation is printed alongside). Also printed,
for the rationale, not candidates for the 1.0: the same quotas on p from a logistic regression on the
drawn terms themselves (their weights and the group intercepts fitted on the training rows: what a
method that finds the hidden structure approaches) and on the reference's gradient-boosted p. Seconds.

`--draws E...` adds the design check of 5.0.0's rationale: other members of the same generator (entropy E
instead of the task's), each split as the task is, and on each one's test rows the achievement
clip((s - majority) / (oracle - majority), 0, 1) of the drawn terms refitted and of a LightGBM tuned by
5-fold cross-validated log loss over a small grid (what a flexible learner without the structure gets),
both with the score-optimal quotas. About 6 CPU-seconds a draw.
"""

from __future__ import annotations

import argparse
import importlib.util

import numpy as np
import pandas as pd

from sklearn.linear_model import LogisticRegression

from oracle_common import conclude, evaluate, prepared, report


def load_module(name: str, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def writer(ids: np.ndarray, pred: np.ndarray):
    def write(out):
        pd.DataFrame({"id": ids, "pred": pred}).to_csv(out / "predictions.csv", index=False)
    return write


def tuned_lightgbm(x: pd.DataFrame, y: np.ndarray, inputs: pd.DataFrame) -> np.ndarray:
    """P(y = 1) on `inputs` from LightGBM with the leaves and rounds of lowest 5-fold log loss."""
    import lightgbm as lgb
    from sklearn.model_selection import cross_val_predict

    def model(leaves: int, rounds: int):
        return lgb.LGBMClassifier(n_estimators=rounds, learning_rate=0.02, num_leaves=leaves, subsample=0.8,
                                  subsample_freq=1, colsample_bytree=0.8, verbose=-1, n_jobs=1, random_state=0)

    def loss(leaves: int, rounds: int) -> float:
        p = cross_val_predict(model(leaves, rounds), x, y, cv=5, method="predict_proba")[:, 1]
        p = np.clip(p, 1e-9, 1 - 1e-9)
        return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))

    leaves, rounds = min(((lv, r) for lv in (4, 8, 16) for r in (100, 300, 800)), key=lambda c: loss(*c))
    return model(leaves, rounds).fit(x, y).predict_proba(inputs)[:, 1]


def design_check(task, gen, ref, entropies: list[int]) -> None:
    scorer = load_module("fairness_evaluate", task.spec.task_dir / "evaluate.py")
    features = [*gen.FEATURES, "a"]
    for entropy in entropies:
        terms: list = []
        frame = gen.truth(terms, entropy)
        parts = gen.split(frame)
        basis = np.column_stack([values for _, values in terms] + [frame["a"].to_numpy()])
        train, test = parts["train"], parts["test"]
        y, a = frame["y"].to_numpy(), frame["a"].to_numpy()

        def score(pred: np.ndarray) -> float:
            return scorer.score(pd.DataFrame({"pred": pred, "y": y[test], "a": a[test]}))["accuracy_at_parity"]

        majority = score(np.zeros(len(test), dtype=int))
        oracle = score(ref.decide(frame["p"].to_numpy()[test], a[test]))
        refit = LogisticRegression(C=10.0, max_iter=5000).fit(basis[train], y[train])
        refitted = score(ref.decide(refit.predict_proba(basis[test])[:, 1], a[test]))
        boosted = score(ref.decide(tuned_lightgbm(frame.loc[train, features], y[train], frame.loc[test, features]),
                                   a[test]))
        ach = lambda s: float(np.clip((s - majority) / (oracle - majority), 0, 1))  # noqa: E731
        print(f"draw {entropy}: {len(terms)} terms; test majority {majority:.4f}, oracle {oracle:.4f}; "
              f"terms refitted {refitted:.4f} (achievement {ach(refitted):.2f}), tuned LightGBM {boosted:.4f} "
              f"(achievement {ach(boosted):.2f})", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=lambda v: int(v, 0), nargs="*", default=[],
                        help="entropies of other draws of the generator for the design check")
    args = parser.parse_args()
    task = prepared("fairness")
    gen = load_module("fairness_prepare", task.spec.task_dir / "prepare.py")
    ref = load_module("fairness_reference", task.spec.task_dir / "reference" / "model.py")
    terms: list = []
    truth = gen.truth(terms)
    basis = pd.DataFrame(np.column_stack([values for _, values in terms] + [truth["a"].to_numpy()]),
                         index=truth["id"])
    truth = truth.set_index("id")
    train = pd.read_csv(task.public_dir / "train.csv")
    frames = {"val": pd.read_csv(task.public_dir / "val_inputs.csv"),
              "test": pd.read_csv(task.test_inputs_dir / "test_inputs.csv")}
    refit = LogisticRegression(C=10.0, max_iter=5000).fit(basis.loc[train["id"]].to_numpy(), train["y"].to_numpy())
    features = [c for c in train.columns if c not in ("id", "y")]
    print(f"the drawn model: {len(terms)} terms ({', '.join(kind for kind, _ in terms)})", flush=True)
    scores, refitted, reference = {}, {}, {}
    for phase, frame in frames.items():
        ids, groups = frame["id"].to_numpy(), frame["a"].to_numpy()
        p = truth.loc[ids, "p"].to_numpy()
        pred = ref.decide(p, groups)
        expected = float(np.mean(np.where(pred == 1, p, 1.0 - p)))  # its parity gap is within the tolerance
        scores[phase] = evaluate(task, phase, writer(ids, pred))
        print(f"{phase}: true-p quotas ({int(pred[groups == 0].sum())}/{int((groups == 0).sum())}, "
              f"{int(pred[groups == 1].sum())}/{int((groups == 1).sum())}), dpd {scores[phase]['dpd']:.5f}, "
              f"expected accuracy under p {expected:.4f}", flush=True)
        pred = ref.decide(refit.predict_proba(basis.loc[ids].to_numpy())[:, 1], groups)
        refitted[phase] = evaluate(task, phase, writer(ids, pred))
        print(f"{phase}: the refitted terms' decisions, expected accuracy under p "
              f"{float(np.mean(np.where(pred == 1, p, 1.0 - p))):.4f}", flush=True)
        reference[phase] = evaluate(task, phase, writer(ids, ref.fit_predict(
            train.set_index("id"), frame.set_index("id")[features], {})))
    report(task, "(not a candidate) the drawn terms, weights refitted on the training rows",
           refitted["val"], refitted["test"])
    report(task, "(not a candidate) the reference's gradient-boosted p", reference["val"], reference["test"])
    report(task, "Bayes-optimal fair rule (true p, score-optimal quotas)", scores["val"], scores["test"])
    conclude(task, "Bayes-optimal fair rule (true p, score-optimal quotas)", scores["val"], scores["test"])
    if args.draws:
        design_check(task, gen, ref, args.draws)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
