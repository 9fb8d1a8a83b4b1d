"""Every module path of the first release (0.1.0) still imports, a moved one with a DeprecationWarning naming
its new path (under the `researchbench` namespace), and so does every public name those modules defined: a plugin written for 0.1.0 keeps working
for one more release (issue 26). The list comes from the release's own tree in git, so none is missed."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from researchbench.benchmark.common.moved import MOVED, OLD_TOPS, RELEASED_IN, new_name
from conftest import REPO

RELEASE_COMMIT = "c42f02f832373c00034e6f36613db86b4ebdeb11"  # the last commit of 2026-11-24: 0.1.0 (CHANGELOG.md)
PACKAGES = ("benchmark", "agents", "hydra_plugins")  # what 0.1.0's wheel shipped (its pyproject.toml)


# The scorer's internals that 0.1.0 had and that changed shape since (not plugin API: docs/plugins.md never listed
# them); everything else a 0.1.0 module defined is still reachable from its old path.
SCORER_INTERNALS = {
    "benchmark.scoring.normalize": {"fml_range"},  # ranges.resolve (an NIRange, per --ranges mode)
    "benchmark.scoring.runs": {"load_runs"},  # selection.select_runs (outages, repeats, not-scored rows)
    "benchmark.scoring.tables": {"domain_table", "paired_table", "score_pivot"},  # scoring/comparisons.py
}


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def release_tree() -> dict[str, str]:
    """module name -> its source at 0.1.0, for every importable module the release shipped."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the release's tree cannot be read")
    if subprocess.run(["git", "cat-file", "-e", f"{RELEASE_COMMIT}^{{commit}}"], cwd=REPO).returncode != 0:
        if _git("rev-parse", "--is-shallow-repository").strip() == "true":
            pytest.skip("a shallow clone: fetch the history (git fetch --unshallow) to check the 0.1.0 paths")
        pytest.fail(f"the 0.1.0 commit {RELEASE_COMMIT} is missing from this repository's history")
    assert f'version = "{RELEASED_IN}"' in _git("show", f"{RELEASE_COMMIT}:pyproject.toml")
    modules = {}
    for path in _git("ls-tree", "-r", "--name-only", RELEASE_COMMIT).split():
        parts = path.removesuffix(".py").split("/")
        if not path.endswith(".py") or parts[0] not in PACKAGES or "templates" in parts:  # templates: task files
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = _git("show", f"{RELEASE_COMMIT}:{path}")
    assert "benchmark.errors" in modules and len(modules) > 60
    return modules


def _public_names(source: str) -> list[str]:
    """The names a module defined itself (functions, classes, constants), not what it imported."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return sorted(n for n in names if not n.startswith("_") and n not in ("log", "hookspec"))


_PROBE = """
import importlib, json, sys, warnings
wanted = json.loads(sys.stdin.read())
report = {}
for module, names in wanted.items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            loaded = importlib.import_module(module)
        except Exception as exc:
            report[module] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        missing = [n for n in names if not hasattr(loaded, n)]
    report[module] = {"missing": missing, "warnings": [str(w.message) for w in caught
                                                       if issubclass(w.category, DeprecationWarning)]}
print(json.dumps(report))
"""


def test_every_module_path_of_0_1_0_imports_and_a_moved_one_warns(release_tree: dict[str, str]) -> None:
    wanted = {module: [n for n in _public_names(source) if n not in SCORER_INTERNALS.get(module, ())]
              for module, source in release_tree.items()}
    proc = subprocess.run([sys.executable, "-c", _PROBE], input=json.dumps(wanted), cwd=REPO, capture_output=True,
                          text=True, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin",
                                          "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    broken = {m: r["error"] for m, r in report.items() if "error" in r}
    assert not broken, f"0.1.0 module paths that no longer import (add them to benchmark/common/moved.py): {broken}"
    missing = {m: r["missing"] for m, r in report.items() if r["missing"]}
    assert not missing, f"0.1.0 public names that are gone (answer for them with deprecated_names): {missing}"
    for module, result in report.items():  # every 0.1.0 path under benchmark/ and agents/ now has a namespaced one
        if module.partition(".")[0] in OLD_TOPS:
            assert any(f"{module} is deprecated" in w and new_name(module) in w for w in result["warnings"]), module


def test_the_moved_list_names_only_paths_of_a_release(release_tree: dict[str, str]) -> None:
    assert set(MOVED) <= set(release_tree), "MOVED answers for a path no release had"
