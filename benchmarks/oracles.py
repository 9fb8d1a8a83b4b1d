"""Oracles that set a task's 1.0 where it is beyond what agent code can run: scored by the task's own evaluator.

    python benchmarks/oracles.py unlearning [--workspace DIR]

Each oracle uses what agent jobs never see (every label, every retained image), writes
its output for the val and test phases into a scratch folder exactly as a driver would, and runs the
task's evaluator command from its manifest on it, as a run's scoring does. It prints the scores; the
manifest's `metric.rationale` quotes them. The other tasks' oracles are benchmarks/oracle_<task>.py.

  unlearning        the architecture retrained from scratch on every retained image (the public quarter
                    and the evaluator's hidden ones), never a forget image: the preparation's own recipe
                    (sklearn's MLP), and the same network trained with the data's nuisance (shifts on the
                    canvas) as augmentation, seeds 0-2; the better recipe on val sets the 1.0
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def evaluate(prepared, phase: str, out: Path) -> dict[str, float]:
    """The manifest's evaluator command on `out` (what a driver would have written) for `phase`."""
    spec = prepared.spec
    metrics = out / "metrics.json"
    subs = {"{python}": sys.executable, "{task_dir}": str(spec.task_dir), "{phase}": phase,
            "{output}": str(out), "{labels}": str(prepared.labels_dir), "{metrics}": str(metrics)}
    argv = []
    for arg in spec.evaluator:
        for key, value in subs.items():
            arg = arg.replace(key, value)
        argv.append(arg)
    subprocess.run(argv, check=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    return json.loads(metrics.read_text())["metrics"]


def load_task_module(spec, name: str):
    import importlib.util

    module_spec = importlib.util.spec_from_file_location(f"{spec.name}_{name}", spec.task_dir / f"{name}.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


# -- unlearning ------------------------------------------------------------------------------------------------

def retained(prepared) -> tuple[np.ndarray, np.ndarray]:
    """Every retained training image: the public quarter and the evaluator's two hidden halves."""
    public = np.load(prepared.public_dir / "retain_subset.npz")
    parts = [(public["x"], public["y"])]
    for phase in ("val", "test"):
        with np.load(prepared.labels_dir / f"eval_{phase}.npz") as data:
            parts.append((data["retain_x"], data["retain_y"]))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def sklearn_recipe(prep, x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """prepare.py's own training of the original model, on the retained images only."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return prep.train_original(x, y)


def augmented_recipe(x: np.ndarray, y: np.ndarray, seed: int, epochs: int = 300) -> dict[str, np.ndarray]:
    """The same network trained from scratch with Adam, each batch also shown rolled by a random offset
    of up to 2 pixels on the canvas (the data's own nuisance)."""
    import torch

    sys.path.insert(0, str(REPO / "ml_tasks" / "unlearning" / "baseline"))
    import arch

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    xs, ys = torch.tensor(x), torch.tensor(y)
    model = arch.make_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, epochs)
    side = int(round(x.shape[1] ** 0.5))
    for _ in range(epochs):
        order = torch.randperm(len(xs))
        for start in range(0, len(xs), 32):
            batch = xs[order[start:start + 32]]
            dy, dx = torch.randint(-2, 3, (2,), generator=generator).tolist()
            rolled = torch.roll(batch.view(-1, side, side), (dy, dx), (1, 2)).reshape(len(batch), -1)
            labels = ys[order[start:start + 32]]
            loss = torch.nn.functional.cross_entropy(model(torch.cat([batch, rolled])), torch.cat([labels, labels]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        schedule.step()
    return arch.to_arrays(model)


def unlearning(prepared, scratch: Path) -> None:
    prep = load_task_module(prepared.spec, "prepare")
    x, y = retained(prepared)
    print(f"unlearning: retrained on {len(y)} retained images, never the forget set")
    runs = {"preparation's recipe (sklearn MLP)": lambda: sklearn_recipe(prep, x, y)}
    runs.update({f"shift-augmented, seed {s}": (lambda s=s: augmented_recipe(x, y, s)) for s in (0, 1, 2)})
    for name, train in runs.items():
        weights = train()
        scores = {}
        for phase in ("val", "test"):
            out = scratch / f"{len(list(scratch.iterdir()))}" / phase
            out.mkdir(parents=True)
            np.savez(out / "model.npz", **{k: np.asarray(v, dtype=np.float32) for k, v in weights.items()})
            scores[phase] = evaluate(prepared, phase, out)
        shown = ", ".join(f"{p} {m['unlearning_score']:.4f} (heldout {m['heldout_acc']:.3f}, gap {m['mia_gap']:.3f})"
                          for p, m in scores.items())
        print(f"  {name}: {shown}", flush=True)


ORACLES = {"unlearning": unlearning}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=sorted(ORACLES))
    parser.add_argument("--workspace", type=Path, help="where to prepare (default: $RESEARCHBENCH_WORKSPACE)")
    args = parser.parse_args(argv)
    if args.workspace:
        os.environ["RESEARCHBENCH_WORKSPACE"] = str(args.workspace.resolve())

    from benchmark.plugins.manager import get_registry
    from benchmark.tasks.manifest import load_task
    from benchmark.tasks.workspace import prepare

    prepared = prepare(load_task(get_registry().tasks[args.task]), log=lambda *_: None)
    with tempfile.TemporaryDirectory() as tmp:
        ORACLES[args.task](prepared, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
