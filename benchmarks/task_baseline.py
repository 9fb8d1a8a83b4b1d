"""Measure a task's baseline the way a run does: val and test phases in the local sandbox, per seed.

    python benchmarks/task_baseline.py <task> [--seeds 0 1 2] [--overlay <folder>] [--workspace DIR]

Prepares the task (in $RESEARCHBENCH_WORKSPACE or --workspace), runs each phase through
`researchbench.benchmark.run.experiment.run_phase` with the local executor (bwrap where available), and prints every
score and its wall time (sandbox run + evaluator), then the mean and sd per phase and the `baseline:`
record to paste into the manifest, in exact values (a record rounded by hand fails `--check`'s
comparison). `--overlay` lays a folder of editable files over the baseline (a trivial predictor, a
reference solution). Timings on a shared machine are inflated:
report CPU seconds alongside (`/usr/bin/time -v python driver.py ...` in a copy of the baseline:
sandboxed jobs are not this process's children, so their CPU time is not visible here).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--phases", nargs="+", default=["val", "test"], choices=["val", "test"])
    parser.add_argument("--overlay", type=Path, help="folder of editable files laid over the baseline")
    parser.add_argument("--workspace", type=Path, help="where to prepare (default: $RESEARCHBENCH_WORKSPACE)")
    args = parser.parse_args(argv)
    if args.workspace:
        os.environ["RESEARCHBENCH_WORKSPACE"] = str(args.workspace.resolve())

    from researchbench.benchmark.executors.local import LocalExecutor, LocalExecutorConfig
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.run.experiment import run_phase
    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.workspace import prepare

    spec = load_task(get_registry().tasks[args.task])
    prepared = prepare(spec, log=lambda *_: None)
    files = {}
    if args.overlay:
        files = {str(p.relative_to(args.overlay)): p.read_text() for p in sorted(args.overlay.rglob("*")) if p.is_file()}
    scores: dict[str, list[float]] = {p: [] for p in args.phases}
    with LocalExecutor(LocalExecutorConfig()) as executor, tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            for phase in args.phases:
                timeout = spec.budget.step_timeout_s if phase == "val" else spec.budget.final_test_timeout_s()
                outcome = run_phase(prepared, files, phase, executor, Path(tmp) / "run" / "scratch", timeout, seed=seed)
                if not outcome.ok:
                    print(f"seed {seed} {phase}: FAILED {outcome.bug_reason}\n{outcome.stderr.decode()[-2000:]}")
                    return 1
                scores[phase].append(outcome.primary)
                extra = ", ".join(f"{k}={v:.4f}" for k, v in sorted(outcome.metrics.items()) if k != spec.metric.name)
                print(f"seed {seed} {phase}: {spec.metric.name}={outcome.primary:.4f} wall {outcome.seconds:.1f} s ({extra})", flush=True)
    for phase, values in scores.items():
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        print(f"{phase}: mean {statistics.fmean(values):.4f} sd {sd:.4f} over seeds {args.seeds}")
    print("baseline:  # exact values: `--check` compares the first seed's with a relative tolerance of 1e-4")
    print(f"  seeds: {args.seeds}")
    for phase, values in scores.items():
        print(f"  {phase}: [{', '.join(repr(float(v)) for v in values)}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
