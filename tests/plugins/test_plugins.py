"""Plugins: hooks documented exactly, a third-party agent installed from its own package, broken ones skipped."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from researchbench.benchmark.contract.agent_api import AGENT_API_VERSION
from researchbench.benchmark.plugins.manager import api_version_problem, load_failure
from conftest import FIXTURES, REPO, run_cli


def test_every_hook_is_documented_with_its_exact_signature() -> None:
    from researchbench.benchmark.plugins.manager import HookSpecs

    docs = (REPO / "docs" / "plugins.md").read_text()
    hooks = [name for name in vars(HookSpecs) if name.startswith("researchbench_")]
    assert len(hooks) == 5
    for name in hooks:
        params = [p for p in inspect.signature(getattr(HookSpecs, name)).parameters if p != "self"]
        assert f"### `{name}({', '.join(params)})`" in docs, name
    documented = set(re.findall(r"### `(researchbench_\w+)\(", docs))
    assert documented == set(hooks), "docs list a hook that does not exist"


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    """Install the fixture plugin packages the way a user would, into a private target dir."""
    target = tmp_path_factory.mktemp("site")
    for package in ("researchbench-stepper", "researchbench-broken", "researchbench-future", "researchbench-knobs"):
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                        "--target", str(target), str(FIXTURES / "plugins" / package)], check=True)
    return target


def test_installed_agent_plugin_runs_and_broken_plugin_is_skipped(plugin_site: Path, toy, tmp_path: Path) -> None:
    proc = run_cli("agent=stepper", "task=toy", "budget.steps=2", "agent.step=1.0", f"results_dir={tmp_path}",
                   env={"PYTHONPATH": str(plugin_site)})
    assert proc.returncode == 0, proc.stderr
    assert "skipping plugin broken" in proc.stderr and "Traceback" not in proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if "plugin future" in ln]  # one line, agent API 2.0 > 1.0
    assert f"written for agent API 2.0, this researchbench has {AGENT_API_VERSION}; upgrade researchbench" in line
    (run_dir,) = (tmp_path / "stepper" / "toy").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["agent"] == "stepper" and summary["steps"]["experiments"] == 2
    assert summary["best"]["val"] == 0.0  # slope 1 + 2 x 1.0 = 3, the true slope


def test_a_plugin_written_for_another_agent_api_is_not_loaded(plugin_site: Path) -> None:
    proc = run_cli("agent=future", "task=toy", env={"PYTHONPATH": str(plugin_site)})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "skipping plugin future: it was written for agent API 2.0" in proc.stderr


def test_a_plugin_written_for_0_1_0_module_paths_runs(plugin_site: Path, toy, tmp_path: Path) -> None:
    """researchbench-knobs imports benchmark.errors, benchmark.agent_api and benchmark.plugins as 0.1.0 had them."""
    proc = run_cli("agent=random_knobs", "task=toy", "budget.steps=1", f"results_dir={tmp_path}",
                   env={"PYTHONPATH": str(plugin_site), "PYTHONWARNINGS": "always::DeprecationWarning"})
    assert proc.returncode == 0, proc.stderr
    assert "skipping plugin random_knobs" not in proc.stderr
    assert "benchmark.errors is deprecated" in proc.stderr and "import researchbench.benchmark.common.errors instead" in proc.stderr
    (run_dir,) = (tmp_path / "random_knobs" / "toy").iterdir()
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "finished"


def test_a_plugin_that_fails_to_import_is_named_with_its_package_error_and_fix(plugin_site: Path) -> None:
    proc = run_cli("agent=broken", "task=toy", env={"PYTHONPATH": str(plugin_site)})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert line == ("error: unknown agent 'broken': plugin broken (package researchbench-broken) failed to load: "
                    "ImportError: this plugin is broken on purpose (needs a library that is not installed); "
                    "reinstall or upgrade researchbench-broken (pip install -U researchbench-broken); "
                    "RESEARCHBENCH_DISABLE_ENTRYPOINTS=1 loads only the built-ins")
    assert "needs its plugin package installed" not in proc.stderr
    warning = "skipping plugin broken (package researchbench-broken) failed to load: ImportError"
    assert warning in proc.stderr
    typo = run_cli("agent=stepprr", "task=toy", env={"PYTHONPATH": str(plugin_site)})  # another name: did you mean
    assert "did you mean 'stepper'?" in typo.stderr and "failed to load (see the warnings above): broken (package " \
        "researchbench-broken)" in typo.stderr


@pytest.mark.parametrize("missing,fix", [
    ("benchmark.hooks", "it imports benchmark.hooks, which researchbench"),
    ("sklearn_extra", "install the module it needs (pip install sklearn_extra), or reinstall rb-x")])
def test_an_import_failure_names_its_fix(missing: str, fix: str) -> None:
    failure = load_failure("x", "rb-x", ModuleNotFoundError(f"No module named '{missing}'", name=missing))
    assert failure.line().startswith(f"plugin x (package rb-x) failed to load: ModuleNotFoundError: No module named "
                                     f"'{missing}'; {fix}")


@pytest.mark.parametrize("declared,problem", [
    (None, ""), ("1.0", ""), ("1.4", ""), ("1.5", "written for agent API 1.5, this researchbench has 1.4; upgrade"),
    ("2.0", "upgrade researchbench"), ("0.9", "install a release of rb_x written for agent API 1.x, or port it"),
    ("one", "not a 'MAJOR.MINOR' string"), (1.0, "not a 'MAJOR.MINOR' string")])
def test_agent_api_compatibility(declared, problem) -> None:
    found = api_version_problem("rb_x", declared, harness="1.4")
    assert problem in found if problem else found == ""


def test_list_names_the_package_that_registered_an_agent(plugin_site: Path) -> None:
    proc = run_cli("list", "agents", env={"PYTHONPATH": str(plugin_site)})
    assert proc.returncode == 0
    (stepper,) = [line for line in proc.stdout.splitlines() if line.split()[0] == "stepper"]
    assert stepper.endswith("[package researchbench-stepper]")
    plugins = {"stepper", "random_knobs"}
    assert all(line.endswith("[built-in]") for line in proc.stdout.splitlines()[1:] if line.split()[0] not in plugins)


def test_plugin_agent_config_is_validated(plugin_site: Path) -> None:
    proc = run_cli("agent=stepper", "task=toy", "agent.stpe=2", env={"PYTHONPATH": str(plugin_site)})
    assert proc.returncode == 2 and "agent.step" in proc.stderr


def test_a_raising_hook_is_skipped_not_fatal() -> None:
    from researchbench.benchmark.plugins.manager import get_registry, hookimpl

    class Tracker:
        calls = 0

        @hookimpl
        def researchbench_on_node(self, node, run):
            Tracker.calls += 1
            raise RuntimeError("tracker down")

    registry = get_registry()
    registry.pm.register(Tracker(), name="tracker")
    try:
        registry.notify("researchbench_on_node", node={}, run={})
        assert Tracker.calls == 1 and any("tracker" in s for s in registry.skipped)
    finally:
        registry.pm.unregister(name="tracker")


def test_cfg_job_and_multirun(toy, tmp_path: Path) -> None:
    proc = run_cli("task=toy", "--cfg", "job")
    assert proc.returncode == 0 and "name: optuna" in proc.stdout and "name: toy" in proc.stdout
    proc = run_cli("-m", "task=toy", "seed=0,1", "budget.steps=1", "quiet=true", f"results_dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr
    runs = sorted(p.name for p in (tmp_path / "optuna" / "toy").iterdir())
    assert len(runs) == 2 and runs[0].startswith("seed0-") and runs[1].startswith("seed1-")
