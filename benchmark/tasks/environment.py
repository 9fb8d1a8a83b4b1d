"""The library versions a task's experiments run with, as prompt facts.

Why: an LLM writes against the API it remembers, and a keyword that a library removed (scikit-learn's
`n_alphas`) costs an experiment. Jobs run on the harness's interpreter (the local executor), or in an
image pinned to the harness's versions (benchmark/executors/modal/image.py), so the versions installed
here are the job's. A run takes them once, at its start.
"""

from __future__ import annotations

import importlib.metadata
import platform

from researchbench.benchmark.tasks.manifest import TaskSpec


# Importable in every job whether a task names them or not (the harness's own stack): an LLM must not
# have to guess, e.g. whether torch is there when a task's text invites neural models.
COMMON = ("numpy", "pandas", "scipy", "scikit-learn", "torch")


def requirement_versions(spec: TaskSpec) -> dict[str, str]:
    """{"python": "3.12.3", distribution name: installed version or "not installed"} for the common
    stack, then the task's requirements in the manifest's order."""
    from packaging.requirements import InvalidRequirement, Requirement

    versions = {"python": platform.python_version()}
    names = list(COMMON)
    for req in spec.requirements:
        try:
            names.append(Requirement(req.pip).name)
        except InvalidRequirement:
            continue  # the manifest check reports it; a prompt fact is not the place
    for name in dict.fromkeys(names):
        if name in versions:
            continue
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions
