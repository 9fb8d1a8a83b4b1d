"""A task's baseline measured the way a run measures it: val and test phases in the sandbox, per seed.

    python benchmarks/task_baseline.py <task> [--seeds 0 1 2] [--overlay DIR]

Prepares the task in a temporary workspace, then for each seed runs the pristine baseline (or the
baseline with the editable files of --overlay laid over it, e.g. a checks.trivial folder) through
`benchmark.experiment.run_phase` with the local executor: the same sandbox, output collection and
evaluator as an agent's experiment. Prints one line per seed (val, test, wall seconds of the val
phase, which include the sandbox and the evaluator and grow with the machine's load) and mean +- sd;
the last line is JSON for the manifest's `baseline` record. For CPU seconds, time the driver itself
(`/usr/bin/time -v python driver.py ...` in a copy of the baseline).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv: list[str] | None = None) -> int:
    from benchmark.executors import LocalExecutor, LocalExecutorConfig
    from benchmark.experiment import run_phase
    from benchmark.plugins import get_registry
    from benchmark.task import load_task
    from benchmark.workspace import prepare

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--overlay", type=Path, help="a folder of editable files laid over the baseline")
    args = parser.parse_args(argv)

    spec = load_task(get_registry().tasks[args.task])
    files = {}
    if args.overlay:
        files = {str(p.relative_to(args.overlay)): p.read_text() for p in args.overlay.rglob("*") if p.is_file()}
    record: dict[str, list] = {"seeds": [], "val": [], "test": []}
    with tempfile.TemporaryDirectory(prefix="task-baseline-") as tmp:
        prepared = prepare(spec, root=Path(tmp) / "ws", log=lambda *a: None)
        with LocalExecutor(LocalExecutorConfig(sandbox="auto")) as executor:
            for seed in args.seeds:
                scores = {}
                for phase in ("val", "test"):
                    wall0 = time.perf_counter()
                    timeout = spec.budget.step_timeout_s if phase == "val" else spec.budget.final_test_timeout_s()
                    outcome = run_phase(prepared, files, phase, executor, Path(tmp) / "results" / "scratch" / "0001",
                                        timeout, seed=seed)
                    if not outcome.ok:
                        print(f"seed {seed} {phase}: {outcome.bug_reason}\n{outcome.stderr.decode()[-2000:]}")
                        return 1
                    scores[phase] = (outcome.primary, time.perf_counter() - wall0)
                record["seeds"].append(seed)
                record["val"].append(scores["val"][0])
                record["test"].append(scores["test"][0])
                print(f"seed {seed}: val {scores['val'][0]:.6g} test {scores['test'][0]:.6g} "
                      f"(val phase {scores['val'][1]:.1f} s wall)", flush=True)
    for phase in ("val", "test"):
        values = record[phase]
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        print(f"{phase}: {statistics.mean(values):.6g} +- {sd:.3g} over {len(values)} seeds")
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
