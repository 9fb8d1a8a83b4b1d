"""What isolation costs: one experiment's time split into its parts, beside the same driver run directly.

    python benchmarks/experiment_overhead.py [--task causality] [--phase val] [--repeats 3]

Rows (median wall seconds over the repeats, CPU seconds where this process can see them):
  direct            the phase's driver run as a plain subprocess in a copy of the baseline (with the
                    job's thread settings: the task's `resources.cpus`), then the evaluator the same way
  harness           `researchbench.benchmark.run.experiment.run_phase` through the local executor, as a run does it, split
                    into materialize (code dir), job (sandbox start, the driver, the disk and limit
                    guards, output copy-back), collect (declared outputs checked and handed over) and
                    evaluate (the evaluator in its own sandbox)
  empty job         the same phase job with `python -c pass` as its program: the sandbox's fixed cost,
                    with the capped job filesystem and (where it applies) without it
The last line, `fixed cost per experiment`, is harness total minus the direct run (driver +
evaluator): what isolation adds to every experiment. Target: <= 1 s. Timings on a busy machine are
inflated; the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one subprocess; fails loudly when it does."""
    cpu, started = _children_cpu(), time.monotonic()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"error: {' '.join(argv[:3])} ... exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return wall, _children_cpu() - cpu


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="causality")
    parser.add_argument("--phase", default="val", choices=["val", "test"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

    from researchbench.benchmark.common.errors import UserError
    from researchbench.benchmark.executors.local import LocalExecutor, LocalExecutorConfig
    from researchbench.benchmark.executors.local.sandbox import THREAD_ENV
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.run.experiment import phase_job, run_phase
    from researchbench.benchmark.tasks.manifest import load_task, render
    from researchbench.benchmark.tasks.workspace import open_prepared

    registry = get_registry()
    if args.task not in registry.tasks:
        print(f"error: unknown task {args.task!r}; known: {', '.join(sorted(registry.tasks))}", file=sys.stderr)
        return 2
    spec = load_task(registry.tasks[args.task])
    try:
        prepared = open_prepared(spec)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    timeout = spec.budget.step_timeout_s if args.phase == "val" else spec.budget.final_test_timeout_s()
    # the job's own thread settings (job_env), so both sides do the same work
    env = {**os.environ, **{name: str(spec.resources.cpus) for name in THREAD_ENV}, "OMP_WAIT_POLICY": "PASSIVE"}
    rows: dict[str, list[float]] = {}

    def add(name: str, value: float | None) -> None:
        if value is not None:
            rows.setdefault(name, []).append(value)

    with tempfile.TemporaryDirectory(prefix="overhead-") as tmp_name:
        tmp = Path(tmp_name)
        with LocalExecutor(LocalExecutorConfig(sandbox="auto")) as executor:
            for i in range(args.repeats):
                # the driver and the evaluator as plain subprocesses
                code, out, metrics = tmp / f"direct{i}", tmp / f"direct{i}-out", tmp / f"direct{i}-metrics"
                shutil.copytree(prepared.baseline_dir, code)
                out.mkdir()
                metrics.mkdir()
                driver = render(spec.phases[args.phase], python=sys.executable, data=str(prepared.public_dir),
                                output=str(out), test_inputs=str(prepared.test_inputs_dir), seed="0",
                                code=str(code))
                wall, cpu = _timed(driver, code, env)
                add("direct: driver", wall)
                add("direct: driver cpu", cpu)
                evaluator = render(spec.evaluator, python=sys.executable, task_dir=str(spec.task_dir),
                                   output=str(out), labels=str(prepared.labels_dir),
                                   metrics=str(metrics / "metrics.json"), phase=args.phase)
                wall, cpu = _timed(evaluator, metrics, env)
                add("direct: evaluator", wall)
                add("direct: evaluator cpu", cpu)

                # the same phase through the harness
                outcome = run_phase(prepared, {}, args.phase, executor, tmp / "scratch" / f"{i:04d}", timeout)
                if not outcome.ok:
                    print(f"error: the baseline's {args.phase} phase failed: {outcome.bug_reason}", file=sys.stderr)
                    return 1
                add("harness: total", outcome.seconds)
                for part, seconds in outcome.timings.items():
                    add(f"harness: {part}", seconds)
                add("harness: job cpu", outcome.cpu_seconds)

                # the sandbox's fixed cost: the same job layout running `python -c pass`
                for relocate in sorted({executor.relocates, False}, reverse=True):
                    scratch = tmp / "empty" / f"{i}-{relocate}"
                    for sub in ("code", "output"):
                        (scratch / sub).mkdir(parents=True)
                    job = phase_job(prepared, args.phase, scratch, timeout)
                    job = dataclasses.replace(job, argv=(sys.executable, "-I", "-S", "-c", "pass"))
                    saved, executor.relocates = executor.relocates, relocate
                    try:
                        started = time.monotonic()
                        result = executor.submit(job).result()
                        add(f"empty job, capped fs {'on' if relocate else 'off'}", time.monotonic() - started)
                    finally:
                        executor.relocates = saved
                    if result.error or result.exit_code != 0:
                        print(f"error: the empty job failed: {result.error or result.exit_code}", file=sys.stderr)
                        return 1

    direct = _median(rows["direct: driver"]) + _median(rows["direct: evaluator"])
    fixed = _median(rows["harness: total"]) - direct
    load = os.getloadavg()[0]
    print(f"experiment_overhead: {args.task} {args.phase} phase, {args.repeats} repeat(s), median seconds "
          f"(load average {load:.1f} on {os.cpu_count()} CPUs)")
    for name, values in rows.items():
        print(f"  {name:<32} {_median(values):8.3f}")
    print(f"fixed cost per experiment (harness total - direct driver and evaluator): {fixed:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
