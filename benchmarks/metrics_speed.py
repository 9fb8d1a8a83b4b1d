"""Scoring speed: every metric over 12 tasks x 3 seeds x 50 steps of fixture runs, warm embedding cache.

    python benchmarks/metrics_speed.py [--tasks 12 --seeds 3 --steps 50]

Writes fixture runs (journal, blobs, summary, as the engine writes them; nothing is executed), builds a
tiny RoBERTa locally (no download), embeds every snapshot once with an empty cache (the cold pass:
snapshots/s on CPU with the tiny model, reported as cold_snapshots_per_s), then times the whole scorer
(all metrics, tables, plots and the HTML report) with the cache warm. Target: seconds <= 30. The last
line is machine-read; cpu_seconds (user+sys of this process) is reported beside wall time because the
machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

BASE = '''import numpy as np


class Model:
    """A small regressor, edited step by step."""

    def __init__(self, lr={lr}, epochs={epochs}, width={width}):
        self.lr, self.epochs, self.width = lr, epochs, width

    def fit(self, X, y):
        rng = np.random.default_rng({seed})
        self.w = rng.normal(size=(X.shape[1], self.width)) * {scale}
        for _ in range(self.epochs):
            h = np.tanh(X @ self.w)
            grad = X.T @ (h - y[:, None]) / len(X)
            self.w -= self.lr * grad
        return self

    def predict(self, X):
        return np.tanh(X @ self.w).mean(axis=1)
'''


def write_fixture_runs(root: Path, tasks: int, seeds: int, steps: int) -> int:
    from scoring_runs import Step, write_run

    snapshots = 0
    for t in range(tasks):
        direction = "lower" if t % 2 else "higher"
        floor, target = (20.0, 1.0) if direction == "lower" else (0.5, 0.95)
        for seed in range(seeds):
            rng = random.Random(f"{t}:{seed}")
            base = 10.0 if direction == "lower" else 0.6
            run = [Step("0000", "baseline", "ok", base, files={"model.py": BASE.format(
                lr=0.1, epochs=10, width=8, seed=0, scale=0.1), "params.json": '{"alpha": 1}\n'})]
            for i in range(1, steps + 1):
                parent = run[rng.randrange(len(run))].id if i > 1 else "0000"
                status = rng.choices(["ok", "buggy", "edit_failed"], [0.7, 0.2, 0.1])[0]
                drift = rng.random()
                value = base - 8 * drift if direction == "lower" else base + 0.3 * drift
                files = {"model.py": BASE.format(lr=round(rng.uniform(0.01, 1), 3), epochs=rng.randrange(5, 200),
                                                 width=rng.randrange(2, 64), seed=i, scale=round(rng.random(), 3))
                         + f"\n# step {i}\n" + "".join(f"EXTRA_{k} = {rng.random():.5f}\n" for k in range(i % 20)),
                         "params.json": f'{{"alpha": {rng.random():.4f}}}\n'}
                run.append(Step(f"{i:04d}", rng.choice(["draft", "improve", "debug"]), status,
                                value if status == "ok" else None, [parent], seconds=rng.uniform(1, 60),
                                files=files, usd=0.002, tokens=3000))
                snapshots += status != "edit_failed"
            write_run(root, f"agent{seed % 2}", f"task{t:02d}", seed, run, direction=direction, floor=floor,
                      target=target, baseline_test=base, best_test=base, budget_steps=steps, domain=f"d{t % 4}")
    return snapshots


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    from researchbench.benchmark.scoring.embeddings import Embedder, embed_runs
    from researchbench.benchmark.scoring.pipeline import Options, score
    from researchbench.benchmark.scoring.selection import select_runs
    from scoring_runs import build_tiny_roberta

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        snapshots = write_fixture_runs(root / "results", args.tasks, args.seeds, args.steps)
        model = build_tiny_roberta(root / "tiny", [BASE] * 4)
        runs = select_runs(root / "results", warn=print).runs
        embedder = Embedder(str(model), root / "cache", device="cpu")
        embedder._ensure_model()  # model loading is not part of the throughput
        cold_cpu0, start = time.process_time(), time.perf_counter()
        embed_runs(runs, embedder)
        cold, cold_cpu = time.perf_counter() - start, time.process_time() - cold_cpu0
        print(f"cold pass: {embedder.computed} distinct snapshots embedded in {cold:.2f}s ({cold_cpu:.2f} CPU s)")
        options = Options(results=root / "results", out=root / "out", embedding_model=str(model),
                          embedding_cache=root / "cache", device="cpu")
        cpu0, start = time.process_time(), time.perf_counter()
        results = score(options, print)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu0
        rows = results["runs"]
        assert rows["spread_mean"].notna().all(), "exploration metrics missing"
        print(f"scored {len(rows)} runs ({snapshots} snapshots) with a warm cache; report {options.out}/report.html")
        print(f"seconds={seconds:.2f} cpu_seconds={cpu:.2f} target<=30 "
              f"cold_snapshots_per_s={embedder.computed / cold:.1f} "
              f"cold_snapshots_per_cpu_s={embedder.computed / cold_cpu:.1f} (tiny RoBERTa, CPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
