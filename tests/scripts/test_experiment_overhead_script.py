"""benchmarks/experiment_overhead.py runs a real experiment both ways and prints every part it names."""

from __future__ import annotations

import re

from conftest import run_cli


def test_overhead_script_splits_one_experiment_of_the_toy_task(toy) -> None:
    proc = run_cli("--task", "toy", "--repeats", "1", script="benchmarks/experiment_overhead.py")
    assert proc.returncode == 0, proc.stderr
    values = dict(re.findall(r"^  (\S.*?)\s{2,}(-?\d+\.\d+)$", proc.stdout, flags=re.M))
    for row in ("direct: driver", "direct: evaluator", "harness: total", "harness: materialize", "harness: job",
                "harness: collect", "harness: evaluate", "empty job, capped fs off"):
        assert float(values[row]) >= 0.0, row
    parts = sum(float(values[f"harness: {p}"]) for p in ("materialize", "job", "collect", "evaluate"))
    assert parts <= float(values["harness: total"]) + 0.01  # the parts are laps of the total
    assert re.search(r"^fixed cost per experiment .*: -?\d+\.\d+ s$", proc.stdout, flags=re.M)


def test_overhead_script_names_an_unknown_task_in_one_line() -> None:
    proc = run_cli("--task", "no_such_task", script="benchmarks/experiment_overhead.py")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "unknown task 'no_such_task'" in proc.stderr
