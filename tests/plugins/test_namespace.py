"""One import namespace (docs/architecture.md, "One namespace"): the wheel installs `researchbench` (with the
repository's benchmark/, agents/ and task_runtime/ folders inside it) and Hydra's shared `hydra_plugins`, nothing
else; 0.1.0's top-level names answer for one release; another project's top-level `agents` (OpenAI's Agents
SDK) is left alone, so the two share an environment."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

ENV = {"PATH": "/usr/bin:/bin", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}


def _probe(code: str, *, cwd: Path, path: list[Path], drop_repo: bool = False) -> dict:
    """Run `code` in a fresh interpreter with `path` first on sys.path; it prints one JSON object."""
    head = "import sys\n"
    if drop_repo:  # an installed wheel only: not the checkout an editable install puts on sys.path
        head += f"sys.path[:] = [p for p in sys.path if p not in ('', {str(REPO)!r})]\n"
    head += f"sys.path[:0] = {[str(p) for p in path]!r}\n"
    proc = subprocess.run([sys.executable, "-W", "always::DeprecationWarning", "-c", head + code], cwd=cwd,
                          capture_output=True, text=True, env=ENV, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return {"out": json.loads(proc.stdout.strip().splitlines()[-1]), "stderr": proc.stderr}


FOREIGN = """
import json, agents
first = agents.SDK
import researchbench.agents.aide, researchbench
import agents as again
print(json.dumps({"first": first, "again": again.SDK, "ours": researchbench.agents.aide.__name__}))
"""


def test_another_projects_agents_package_keeps_its_name(tmp_path):
    sdk = tmp_path / "sdk" / "agents"
    sdk.mkdir(parents=True)
    (sdk / "__init__.py").write_text("SDK = 'openai-agents'\n")
    result = _probe(FOREIGN, cwd=tmp_path, path=[tmp_path / "sdk", REPO])
    assert result["out"] == {"first": "openai-agents", "again": "openai-agents", "ours": "researchbench.agents.aide"}
    assert "DeprecationWarning" not in result["stderr"]


WHEEL = """
import json, warnings
import researchbench, researchbench.agents.aide as aide
from researchbench.benchmark.common.paths import task_runtime_dir
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from benchmark.errors import UserError
    import agents.operators
    import task_runtime
print(json.dumps({"path": list(researchbench.__path__), "aide": aide.__file__, "runtime": task_runtime_dir(),
                  "same": UserError is researchbench.UserError, "kit": agents.operators.__name__,
                  "job_name": task_runtime.__name__, "warned": sorted(str(w.message).split()[0] for w in caught)}))
"""


@pytest.fixture(scope="module")
def unpacked_wheel(tmp_path_factory) -> Path:
    """The project's wheel, built as `pip wheel` would and unpacked as pip would install it."""
    hatchling = pytest.importorskip("hatchling.builders.wheel")
    out = tmp_path_factory.mktemp("wheel")
    built = hatchling.WheelBuilder(str(REPO)).build(directory=str(out), versions=["standard"])
    target = out / "site"
    zipfile.ZipFile(next(iter(built))).extractall(target)
    return target


def test_the_wheel_installs_one_namespace_and_hydras(unpacked_wheel):
    tops = {p.name for p in unpacked_wheel.iterdir() if not p.name.endswith(".dist-info")}
    assert tops == {"researchbench", "hydra_plugins"}
    entry_points = next(unpacked_wheel.glob("*.dist-info")).joinpath("entry_points.txt").read_text()
    assert "researchbench = researchbench.benchmark.cli.main:main" in entry_points


def test_an_installed_wheel_imports_its_modules_and_0_1_0_paths(unpacked_wheel, tmp_path):
    out = _probe(WHEEL, cwd=tmp_path, path=[unpacked_wheel], drop_repo=True)["out"]
    package = unpacked_wheel / "researchbench"
    assert out["path"] == [str(package)]  # the folders are inside it: no reach into a checkout
    assert out["aide"] == str(package / "agents" / "aide.py")
    assert out["runtime"] == str(package / "task_runtime")
    assert out["same"] and out["kit"] == "researchbench.agents.kit.operators"
    assert out["job_name"] == "researchbench.task_runtime"  # jobs' name for it, one module, no warning
    assert out["warned"] == ["agents", "agents.operators", "benchmark", "benchmark.errors"]
