"""federated_learning's 1.0: centralised training on the union of the clients' shards.

    python benchmarks/oracle_federated_learning.py

The federated-learning literature bounds a federated method by centralised training: the same data
pooled on one machine, no rounds, no message limit, no label skew (McMahan et al. 2017; Hsu et al.
2019 report it beside every Dirichlet split). Here the pooled shards train each candidate, without
the driver's protocol: the baseline's MLP (64 hidden units), k-nearest neighbours and RBF support
vector machines (the strongest classifier family on these 8x8 digits); the one with the best
validation accuracy is the oracle, scored once on the hidden test set by the task's own evaluator.
About half a CPU-minute.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from oracle_common import BestOnVal, digit_classifiers, evaluate, prepared

N_CLIENTS = 10


def candidates() -> dict[str, object]:
    return digit_classifiers("centralised MLP 64-64-10")


def main() -> int:
    task = prepared("federated_learning")
    shards = [np.load(task.public_dir / f"client{c}.npz") for c in range(N_CLIENTS)]
    x, y = np.concatenate([s["x"] for s in shards]), np.concatenate([s["y"] for s in shards])
    inputs = {"val": np.load(task.public_dir / "val_inputs.npz"),
              "test": np.load(task.test_inputs_dir / "test_inputs.npz")}
    picker = BestOnVal(task)
    for name, model in candidates().items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(x, y)
        scores = {}
        for phase, d in inputs.items():
            frame = pd.DataFrame({"id": d["id"], "label": model.predict(d["x"]).astype(np.int64)})
            scores[phase] = evaluate(task, phase, lambda out, f=frame: f.to_csv(out / "predictions.csv", index=False))
        picker.add(name, scores)
    picker.conclude()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
