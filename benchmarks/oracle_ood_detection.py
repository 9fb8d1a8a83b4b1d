"""ood_detection's 1.0: the likelihood ratio of the task's own generator, the Bayes-optimal detector.

    python benchmarks/oracle_ood_detection.py [--scale lite|gpu]

`--scale gpu` measures the ood_detection_gpu variant's 1.0 on its workspace (prepare.py --scale gpu: the same
generator and world, more training glyphs, 5000 images per evaluation phase instead of 1000).

The generator (ml_tasks/ood_detection/prepare.py) is known and finite: a glyph is a set of strokes (segments
of a 3x3 lattice); each training class draws its core segments and each of its optional ones with its own
probability; an OOD glyph is a novel class's glyph or a training glyph altered by one of three mechanisms
(a core segment swapped, dropped, or a segment added), mixed in each phase's own proportions; every glyph is
rendered in one of a finite set of poses (offset, rotation, stroke width), scaled by a brightness uniform on
an interval, and given Gaussian pixel noise. So p(x | in distribution) and p(x | OOD, phase) are exact
finite sums over segment sets and poses with the brightness integrated in closed form
(`prepare.log_likelihood`), and their ratio is the most powerful test at every threshold
(Neyman-Pearson): no detector has a lower expected FPR at 95% TPR. The oracle replays the generator
(`prepare.generate()`, checked against the prepared files), knows the drawn classes, each phase's novel
classes, mechanisms and mixture, and scores log p(x | OOD, phase) - log p(x | in distribution). It never
looks up a hidden image: every score is a function of the image and the generator's parameters only.

Also reported (not the 1.0): the in-distribution likelihood alone, -log p(x | in distribution) (the true
in-distribution generator, no knowledge of the OOD mechanisms). About 2 CPU-minutes (lite); the time grows with
the evaluation sets, so about 5 times that at gpu scale.
"""

from __future__ import annotations

import argparse
import importlib.util

import numpy as np
import pandas as pd

from oracle_common import BestOnVal, evaluate, prepared
from researchbench.task_runtime.digits import PIXELS


TASKS = {"lite": "ood_detection", "gpu": "ood_detection_gpu"}  # the gpu variant runs the base's prepare.py


def generator(task):
    spec = importlib.util.spec_from_file_location("ood_prepare", task.spec.task_dir / "prepare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def likelihood_ratio(gen, draws, phase: str, x: np.ndarray, log_id: np.ndarray) -> np.ndarray:
    """log p(x | OOD, phase) - log p(x | in distribution)."""
    log_ood = np.full(len(x), -np.inf)
    for mechanism, weight in zip(gen.MECHANISMS, draws[phase]["mix"]):
        means, logp = gen.mean_bank(draws[phase]["mechanisms"][mechanism])
        log_ood = np.logaddexp(log_ood, np.log(weight) + gen.log_likelihood(x, means, logp))
    return log_ood - log_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=sorted(TASKS), default="lite",
                        help="lite: the ood_detection task; gpu: its ood_detection_gpu variant")
    args = parser.parse_args(argv)
    measure(prepared(TASKS[args.scale]), args.scale)
    return 0


def measure(task, scale: str) -> None:
    """Score both candidates on the prepared `task` (prepared at `scale`) and print the oracle's line."""
    gen = generator(task)
    draws = gen.generate(scale)  # prepare.py's draws, replayed
    train = pd.read_csv(task.public_dir / "train.csv")
    inputs = {"val": pd.read_csv(task.public_dir / "val_inputs.csv"),
              "test": pd.read_csv(task.test_inputs_dir / "test_inputs.csv")}
    order = np.argsort(draws["train"]["id"])
    assert np.array_equal(train[PIXELS].to_numpy(), draws["train"]["x"][order]), "the replayed generator disagrees"
    x = {}
    for phase, frame in inputs.items():
        rows = pd.Series(np.arange(len(draws[phase]["id"])), index=draws[phase]["id"]).loc[frame["id"]].to_numpy()
        x[phase] = draws[phase]["x"][rows]
        assert np.array_equal(frame[PIXELS].to_numpy(), x[phase]), f"the replayed generator disagrees on {phase}"
    id_means, id_logp = gen.mean_bank(gen.class_sets(draws["classes"]))
    log_id = {phase: gen.log_likelihood(x[phase], id_means, id_logp) for phase in x}
    candidates = {
        "likelihood ratio of the true generator (in-distribution classes, each phase's OOD mechanisms and mix)":
            {phase: likelihood_ratio(gen, draws, phase, x[phase], log_id[phase]) for phase in x},
        "in-distribution likelihood alone (true in-distribution generator, OOD mechanisms unknown)":
            {phase: -log_id[phase] for phase in x},
    }

    def scored(scores: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
        assert all(np.isfinite(s).all() for s in scores.values())
        return {phase: evaluate(task, phase, lambda out, p=phase, s=scores[phase]: pd.DataFrame(
            {"id": inputs[p]["id"], "score": s}).to_csv(out / "scores.csv", index=False)) for phase in x}

    picker = BestOnVal(task)
    for name, scores in candidates.items():
        picker.add(name, scored(scores))
    picker.conclude()


if __name__ == "__main__":
    raise SystemExit(main())
