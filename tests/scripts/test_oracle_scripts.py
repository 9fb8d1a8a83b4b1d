"""benchmarks/oracle_<task>.py: each script re-measures its task's scale 1.0 (`metric.target`), the best its
data allow, on the hidden test set through the task's own evaluator; the manifest holds what it prints."""

from __future__ import annotations

import math
import re

import pytest

from researchbench.benchmark.plugins.manager import get_registry
from researchbench.benchmark.tasks.manifest import load_task
from conftest import run_cli

# task -> CPU minutes the script takes on one core (measured), for the timeout
ORACLES = {"causal_effect": 1, "continual_learning": 1, "federated_learning": 1, "domain_generalization": 1,
           "representation_learning": 5, "adversarial_robustness": 10,
           "privacy": 8, "fairness": 1, "semi_supervised": 1, "causal_discovery": 1,
           "unlearning": 3, "ood_detection": 4}
LINE = re.compile(r"^oracle \(best on val\): .*, test (\S+) \(the manifest's metric\.target: (\S+)\)$", re.M)


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(ORACLES))
def test_the_oracle_script_reproduces_the_target(task: str) -> None:
    proc = run_cli(script=f"benchmarks/oracle_{task}.py", timeout=ORACLES[task] * 60 * 4)
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = LINE.search(proc.stdout)
    assert match, proc.stdout[-3000:]
    target = load_task(get_registry().tasks[task]).metric.target
    assert math.isclose(float(match.group(1)), target, rel_tol=1e-4), proc.stdout[-3000:]
