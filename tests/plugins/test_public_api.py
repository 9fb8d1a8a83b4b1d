"""The public API module: every name docs/plugins.md documents imports from `researchbench`, and removed
names keep answering, with a DeprecationWarning, for one release."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import types

import pytest

import researchbench
from researchbench.benchmark.common.moved import deprecated_names
from conftest import REPO

DOC = (REPO / "docs" / "plugins.md").read_text()


def documented_names() -> set[str]:
    """The names in the doc's public-API table and in its `from researchbench import ...` lines."""
    section = DOC.split("## The public API (`researchbench`)", 1)[1].split("\n## ", 1)[0]
    table = {name for row in section.splitlines() if row.startswith("| `")
             for name in re.findall(r"`(\w+)`", row.split("|")[1])}
    imported = {name.strip() for line in re.findall(r"^from researchbench import (.+)$", DOC, re.M)
                for name in line.split(",")}
    return table | imported


def test_every_documented_name_imports_from_researchbench():
    names = documented_names()
    assert {"hookimpl", "AgentSpec", "Proposal", "AGENT_API_VERSION", "__version__"} <= names  # the parse works
    missing = [name for name in sorted(names) if not hasattr(researchbench, name)]
    assert missing == [], f"docs/plugins.md documents names researchbench lacks: {missing}"
    assert names == set(researchbench.__all__), "researchbench.__all__ and docs/plugins.md's table differ"


def test_versions():
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'version = "{researchbench.__version__}"' in pyproject  # one home: pyproject.toml
    assert re.fullmatch(r"\d+\.\d+\.\d+([-+.\w]*)", researchbench.__version__)
    assert re.fullmatch(r"\d+\.\d+", researchbench.AGENT_API_VERSION)
    assert f'RESEARCHBENCH_AGENT_API = "{researchbench.AGENT_API_VERSION}"' in DOC


def test_importing_the_public_api_loads_neither_litellm_nor_torch():
    code = "import sys, researchbench; print(sorted({'litellm', 'torch'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert out.strip() == "[]"


def test_a_removed_name_warns_and_still_works_for_one_release():
    module = types.ModuleType("fake_api")
    module.__getattr__ = deprecated_names("fake_api", {"old": (len, "use fake_api.new")})
    with pytest.warns(DeprecationWarning, match=r"fake_api.old is deprecated .* next release; use fake_api.new"):
        assert module.old is len
    with pytest.raises(AttributeError, match="has no attribute 'other'"):
        module.other


@pytest.mark.parametrize("name", ["improve", "debug"])
def test_the_removed_agent_operators_answer_with_a_warning(name, monkeypatch):
    operators = importlib.import_module("researchbench.agents.kit.operators")
    with pytest.warns(DeprecationWarning, match=f"researchbench.agents.kit.operators.{name} is deprecated.*bind\\(cfg\\)\\['{name}'\\]"):
        legacy = getattr(operators, name)
    seen = {}
    monkeypatch.setattr(operators, "edit", lambda ctx, parents, action, role, cfg: seen.update(role=role, cfg=cfg))

    class OldConfig:  # an earlier release's config: three prompt settings only
        edit_format, memory_size, output_tail_chars = "whole_file", 2, 500

    legacy(None, [], None, OldConfig())
    assert seen["role"] == name and isinstance(seen["cfg"], operators.PromptConfig)
    assert (seen["cfg"].edit_format, seen["cfg"].memory_size, seen["cfg"].prompt_chars) == ("whole_file", 2, 60000)
    with pytest.warns(DeprecationWarning, match="use agents.kit.prompts.SYSTEM"):
        assert operators.SYSTEM == importlib.import_module("researchbench.agents.kit.prompts").SYSTEM
