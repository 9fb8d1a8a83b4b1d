"""A GPU-scale variant on a machine without a GPU: its CPU fallback.

A variant (`extends:` in its task.yaml, benchmark/tasks/manifest.py) runs its base's code at a larger
scale and asks for a GPU. Where none is visible, the same code runs at the base's lite scale on the CPU:
the base's prepare (lite data), resources, budget, metric and checks, with the variant's own baseline files laid
over the base's. Its scores belong to the lite scale, so it is a task of its own name (`<variant>-cpu`)
with no baseline record; `setup.py --check` and the tests use it to exercise the GPU tasks' code path.
"""

from __future__ import annotations

from dataclasses import replace

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.tasks.manifest import TaskSpec, load_task

FALLBACK_SUFFIX = "-cpu"


def cpu_fallback(spec: TaskSpec) -> TaskSpec:
    """The variant's code on its base's lite data and limits, without a GPU."""
    if spec.extends is None:
        raise UserError(f"task {spec.name} is not a variant (no 'extends' in {spec.home / 'task.yaml'}), "
                        "so it has no CPU fallback; run it as it is")
    base = load_task(spec.task_dir)
    return replace(spec, name=spec.name + FALLBACK_SUFFIX, prepare=base.prepare, resources=base.resources,
                   budget=base.budget, metric=base.metric, evaluation=base.evaluation, checks=base.checks,
                   baseline=None, noise=None)
