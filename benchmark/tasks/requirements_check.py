"""All built-in tasks' requirements must install together on a CPU machine without CUDA wheels.

    python -m researchbench.benchmark.tasks.requirements_check --dry-run     # before installing: what pip would add (needs PyPI)
    python -m researchbench.benchmark.tasks.requirements_check --installed   # after installing: what is there now

An offender is a distribution named `nvidia-*` or `triton` (the CUDA stack a GPU torch wheel drags in), or
a torch other than the one installed (an unpinned torch replacing the CPU build). Exit 1 and one line per
offender when there is one. `tests/tasks/test_task_suite.py` (slow) and `.ci/run` call it.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import re
import subprocess
import sys

from researchbench.benchmark.common.paths import REPO_ROOT
from researchbench.benchmark.tasks.manifest import TaskSpec, load_task

_CUDA = re.compile(r"^(nvidia-.*|triton)$")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def builtin_specs() -> list[TaskSpec]:
    return [load_task(p.parent) for p in sorted((REPO_ROOT / "ml_tasks").glob("*/task.yaml"))]


def union(specs: list[TaskSpec]) -> tuple[list[str], list[str]]:
    """(requirements installed with dependencies, those installed with --no-deps), each deduplicated."""
    plain = dict.fromkeys(r.pip for s in specs for r in s.requirements if not r.no_deps)
    no_deps = dict.fromkeys(r.pip for s in specs for r in s.requirements if r.no_deps)
    return list(plain), list(no_deps)


def offenders(names_versions: list[tuple[str, str]], installed_torch: str | None) -> list[str]:
    found = []
    for name, version in names_versions:
        canonical = _canonical(name)
        if _CUDA.match(canonical):
            found.append(f"{canonical} {version} (a CUDA wheel)")
        elif canonical == "torch" and version != installed_torch:
            found.append(f"torch {version} would replace the installed torch {installed_torch}")
    return found


def _installed_torch() -> str | None:
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def dry_run(requirements: list[str], no_deps: bool = False) -> list[tuple[str, str]]:
    """(name, version) of what `pip install --dry-run` would install for these requirements."""
    if not requirements:
        return []
    argv = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-",
            *(["--no-deps"] if no_deps else []), *requirements]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        last = [ln for ln in proc.stderr.splitlines() if ln.strip()][-1:] or ["no output"]
        raise RuntimeError(f"pip could not resolve the tasks' requirements together: {last[0]}")
    report = json.loads(proc.stdout)
    return [(item["metadata"]["name"], item["metadata"]["version"]) for item in report.get("install", [])]


def installed() -> list[tuple[str, str]]:
    return [(d.metadata["Name"] or "", d.version) for d in importlib.metadata.distributions()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--dry-run", action="store_true", help="resolve the union of the requirements with pip")
    mode.add_argument("--installed", action="store_true", help="inspect the installed distributions")
    parser.add_argument("--torch", help="the torch version that must stay installed (default: the installed one)")
    args = parser.parse_args(argv)
    torch = args.torch or _installed_torch()
    if args.dry_run:
        plain, no_deps = union(builtin_specs())
        found = offenders(dry_run(plain) + dry_run(no_deps, no_deps=True), torch)
    else:
        found = offenders(installed(), torch)
    for line in found:
        print(f"requirements check: {line}", file=sys.stderr)
    if not found:
        print(f"requirements check: no CUDA wheels, torch stays {torch}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
