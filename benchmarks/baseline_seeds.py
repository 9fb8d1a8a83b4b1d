"""Measure a task's baseline (or a variant of it) over seeds, through the real sandboxed phases.

    python benchmarks/baseline_seeds.py <task> [--seeds 0 1 2] [--overlay DIR] [--params '{"k": v}'] [--val-only]

Prepares the task (if needed), then for every seed runs the val and the test phase exactly as a run
does (`benchmark.experiment.run_phase`: sandbox, output copy-out, evaluator in its own sandbox) and
prints the primary metric per seed, mean +- sd (sample sd, ddof=1) and the wall seconds of each
phase (sandbox start + driver + copy-out + evaluator; wall time on a shared machine is inflated by
others' load, so measure CPU seconds of a driver with `/usr/bin/time` instead). `--overlay`
lays a folder of editable files over the baseline (e.g. a task's checks/constant), `--params`
merges keys into the knob file, so floors and alternative methods are measured the same way.
The numbers recorded in a manifest's `baseline:` come from this script with no overlay.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmark.executors.local import LocalExecutor, LocalExecutorConfig  # noqa: E402
from benchmark.experiment import run_phase  # noqa: E402
from benchmark.plugins import get_registry  # noqa: E402
from benchmark.task import load_task  # noqa: E402
from benchmark.workspace import prepare  # noqa: E402


def editable_files(prepared, overlay: Path | None, params: dict) -> dict[str, str]:
    spec = prepared.spec
    files = {rel: data.decode() for rel, data in prepared.baseline_files().items() if spec.is_editable(rel)}
    if overlay is not None:
        for path in sorted(overlay.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                files[path.relative_to(overlay).as_posix()] = path.read_text()
    if params:
        if spec.knobs is None:
            raise SystemExit(f"error: task {spec.name} has no knob file to merge --params into")
        merged = {**json.loads(files[spec.knobs.file]), **params}
        files[spec.knobs.file] = json.dumps(merged, indent=2) + "\n"
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--overlay", type=Path, help="folder of editable files laid over the baseline")
    parser.add_argument("--params", default="{}", help="JSON object merged into the knob file")
    parser.add_argument("--val-only", action="store_true")
    parser.add_argument("--sandbox", default="auto", choices=["auto", "bwrap", "none"])
    args = parser.parse_args(argv)

    registry = get_registry()
    if args.task not in registry.tasks:
        raise SystemExit(f"error: unknown task {args.task!r}")
    spec = load_task(registry.tasks[args.task])
    prepared = prepare(spec, log=lambda msg: print(msg, file=sys.stderr))
    files = editable_files(prepared, args.overlay, json.loads(args.params))
    phases = ["val"] if args.val_only else ["val", "test"]
    scores: dict[str, list[float]] = {p: [] for p in phases}
    with LocalExecutor(LocalExecutorConfig(sandbox=args.sandbox)) as executor, \
            tempfile.TemporaryDirectory(prefix="baseline-seeds-") as tmp:
        for seed in args.seeds:
            for phase in phases:
                timeout = spec.budget.step_timeout_s if phase == "val" else spec.budget.final_test_timeout_s()
                wall0 = time.monotonic()
                outcome = run_phase(prepared, files, phase, executor, Path(tmp) / f"{phase}-{seed}", timeout, seed)
                wall = time.monotonic() - wall0
                if not outcome.ok:
                    print(f"seed {seed} {phase}: FAILED: {outcome.bug_reason}\n{outcome.stderr.decode()[-2000:]}")
                    return 1
                scores[phase].append(outcome.primary)
                extra = ", ".join(f"{k} {v:.4f}" for k, v in sorted(outcome.metrics.items()) if k != spec.metric.name)
                print(f"seed {seed} {phase}: {spec.metric.name} {outcome.primary:.4f} "
                      f"({wall:.1f} s wall) [{extra}]", flush=True)
    for phase, values in scores.items():
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        print(f"{phase}: {spec.metric.name} mean {statistics.mean(values):.4f} +- {sd:.4f} over seeds {args.seeds}: "
              f"{[round(v, 4) for v in values]}")
        print(f"  record: {phase}: {values!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
