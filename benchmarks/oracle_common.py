"""Shared plumbing of the benchmarks/oracle_<task>.py scripts: the prepared task and its own evaluator.

Each oracle script measures what a task's `metric.target` (normalized score 1.0) stands for: the best
score its data allows (an oracle that knows the generator, a model trained with every label, joint or
centralised training, the strongest attack or defence one can mount), on the hidden test set, scored by
the task's own `evaluate.py`. The scripts write the output file the evaluator reads into a temporary
folder and run the evaluator on it exactly as the harness does (`spec.evaluator`, a fresh process),
so the number they print is the number a run would be scored with.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def prepared(task: str):
    """The task's PreparedTask (its workspace prepared if needed; $RESEARCHBENCH_WORKSPACE decides where)."""
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.workspace import prepare

    return prepare(load_task(get_registry().tasks[task]), log=lambda *_: None)


def evaluate(task, phase: str, write: Callable[[Path], None]) -> dict[str, float]:
    """Metrics of the output that `write(folder)` puts in `folder`, from the task's own evaluator."""
    spec = task.spec
    with tempfile.TemporaryDirectory() as tmp:
        out, metrics = Path(tmp) / "output", Path(tmp) / "metrics.json"
        out.mkdir()
        write(out)
        values = {"python": sys.executable, "task_dir": str(spec.task_dir), "phase": phase, "output": str(out),
                  "labels": str(task.labels_dir), "metrics": str(metrics)}
        command = [part.format(**values) for part in spec.evaluator]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        proc = subprocess.run(command, cwd=tmp, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"evaluator failed: {proc.stderr.strip()[-2000:]}")
        return json.loads(metrics.read_text())["metrics"]


def report(task, name: str, val: dict[str, float], test: dict[str, float]) -> None:
    metric = task.spec.metric.name
    print(f"{name}: val {metric}={val[metric]:.4f}  test {metric}={test[metric]:.4f}", flush=True)


def conclude(task, name: str, val: dict[str, float], test: dict[str, float]) -> None:
    """The oracle's line: the candidate picked on validation and its hidden-test score, the scale's 1.0."""
    metric = task.spec.metric.name
    print(f"oracle (best on val): {name}: val {val[metric]:.4f}, test {test[metric]!r} "
          f"(the manifest's metric.target: {task.spec.metric.target!r})", flush=True)


class BestOnVal:
    """Reports every candidate's val and test scores and keeps the one best on val (in the metric's direction):
    the oracle's pick."""

    def __init__(self, task) -> None:
        self.task = task
        self.metric = task.spec.metric.name
        self.best: tuple[str, dict[str, dict[str, float]]] | None = None

    def add(self, name: str, scores: dict[str, dict[str, float]], shown: str | None = None) -> None:
        """`scores`: {"val": metrics, "test": metrics}; `shown` replaces `name` on the report line."""
        report(self.task, shown or name, scores["val"], scores["test"])
        better = self.task.spec.metric.better
        if self.best is None or better(scores["val"][self.metric], self.best[1]["val"][self.metric]):
            self.best = (name, scores)

    def conclude(self) -> None:
        assert self.best is not None, "no candidate was added"
        name, scores = self.best
        conclude(self.task, name, scores["val"], scores["test"])
