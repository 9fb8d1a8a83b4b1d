"""unlearning's 1.0: the network retrained from scratch without the forget set, on every retained image.

    python benchmarks/oracle_unlearning.py [--scale gpu]

Unlearning is measured against retraining: the model that never saw the forget set. The oracle uses
what agent code never gets, every retained image (the public eighth and the evaluator's hidden ones,
replayed from the task's generator, `prepare.generate()`), and trains the task's architecture from
scratch on them, never on a forget image: with the recipe of the audit's reference models
(`prepare.train_reference`: Adam, each batch also shown shifted on the canvas) from seeds the
references do not use (so each retrain is one more draw of what the attacks calibrate against), the
same recipe at twice the epochs, and the preparation's own recipe (scikit-learn's MLP, as the original
model was trained). Each is scored on val and test by the task's own evaluator; the best on val is the
scale's 1.0. About two CPU-minutes. `--scale gpu` measures the GPU-scale variant (unlearning_gpu: the
generator's gpu scale, its wider network and reference recipe, the retrains on `pick_device()`'s device),
scored on that variant's prepared workspace: about three CPU-minutes.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from oracle_common import BestOnVal, evaluate, prepared  # noqa: E402


def generator(task):
    spec = importlib.util.spec_from_file_location("unlearning_prepare", task.spec.task_dir / "prepare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=("lite", "gpu"), default="lite",
                        help="lite: the unlearning task; gpu: its GPU-scale variant, unlearning_gpu")
    scale = parser.parse_args(argv).scale
    task = prepared("unlearning" if scale == "lite" else "unlearning_gpu")
    gen = generator(task)
    data = gen.generate(scale)  # prepare.py's draws, replayed
    x, y = data["x"], data["y"]
    with np.load(task.public_dir / "retain_subset.npz") as public:
        assert np.array_equal(public["x"], x[data["retain_public"]]), "the replayed generator disagrees"
    retain = data["retain"]
    assert not set(retain) & set(data["forget"])
    print(f"unlearning: retraining on {len(retain)} retained images, never on the {len(data['forget'])} forget images",
          flush=True)
    if scale == "lite":
        device = "cpu"  # the lite record was measured on the CPU, as prepare.py trains the lite references
    else:
        from researchbench.task_runtime import pick_device

        device = pick_device()
    candidates = {f"reference recipe, seed {s}": (lambda s=s: gen.train_reference(
        x[retain], y[retain], s, scale=scale, device=device)) for s in (0, 1, 2)}
    assert not {0, 1, 2} & set(gen.REFERENCE_SEEDS)
    candidates["reference recipe at twice the epochs, seed 0"] = lambda: gen.train_reference(
        x[retain], y[retain], 0, 2 * gen.SCALES[scale]["reference_epochs"], scale=scale, device=device)

    def sklearn_recipe() -> dict[str, np.ndarray]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return gen.train_original(x[retain], y[retain], scale)

    candidates["the original's recipe (scikit-learn MLP)"] = sklearn_recipe
    picker = BestOnVal(task)
    for name, train in candidates.items():
        weights = {k: np.asarray(v, dtype=np.float32) for k, v in train().items()}
        scores = {phase: evaluate(task, phase, lambda out: np.savez(out / "model.npz", **weights))
                  for phase in ("val", "test")}
        shown = "; ".join(f"{p} retain {m['retain_acc']:.3f} heldout {m['heldout_acc']:.3f} forget {m['forget_acc']:.3f} "
                          f"gap {m['mia_gap']:.3f}" for p, m in scores.items())
        picker.add(name, scores, f"{name} ({shown})")
    picker.conclude()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
