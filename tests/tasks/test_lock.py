"""The pinned environment: the lock covers every import and requirement, a record names its environment,
a differing machine is said so at --check, at a run's start, in summary.json and by the scorer, and the
refresh command rewrites records, versions and the CHANGELOG (docs/environment.md)."""

from __future__ import annotations

import ast
import dataclasses
import importlib.metadata
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from researchbench.benchmark.authoring import lock_refresh
from researchbench.benchmark.common.paths import REPO_ROOT
from researchbench.benchmark.run.summary import environment_line, provenance
from researchbench.benchmark.scoring.selection import select_runs
from researchbench.benchmark.tasks import lock as lock_module
from researchbench.benchmark.tasks.lock import canonical, current_environment, differences, parse_lock, read_lock
from researchbench.benchmark.tasks.manifest import RecordedEnvironment, load_task
from scoring_runs import Step, write_run

LOCK = read_lock()
CODE = ["benchmark", "agents", "task_runtime", "researchbench", "hydra_plugins", "ml_tasks",
        "run_agent_benchmark.py", "compute_agent_metrics.py", "setup.py"]
OUR_PACKAGES = {"benchmark", "agents", "task_runtime", "researchbench", "hydra_plugins"}


def third_party_imports() -> dict[str, set[str]]:
    """Top-level module -> files importing it, over the harness and every task's code; stdlib, our own
    packages and a task's own modules (any .py or package inside its folder: drivers import `model`) left out."""
    found: dict[str, set[str]] = {}
    for root in (REPO_ROOT / name for name in CODE):
        for path in ([root] if root.is_file() else sorted(root.rglob("*.py"))):
            rel = path.relative_to(REPO_ROOT)
            home = REPO_ROOT.joinpath(*rel.parts[:2]) if rel.parts[0] == "ml_tasks" else path.parent
            own = {p.stem for p in home.rglob("*.py")} | {p.name for p in home.rglob("*") if p.is_dir()}
            for node in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
                for top in (n.split(".")[0] for n in names):
                    if top not in sys.stdlib_module_names and top not in OUR_PACKAGES | own | {"__future__"}:
                        found.setdefault(top, set()).add(str(rel))
    return found


def test_the_repository_has_a_lock_of_exact_pins_for_this_platform() -> None:
    assert LOCK is not None, "requirements/lock.txt is missing"
    assert LOCK.python == "3.11" and LOCK.platform == "linux-x86_64"
    assert not [n for n in LOCK.pins if n.startswith("nvidia-") or n == "triton"], "CUDA wheels in the lock"
    assert LOCK.pins["torch"].endswith("+cpu"), "torch must be pinned to its CPU build"
    assert "researchbench" not in LOCK.pins  # the checkout itself is installed editable, not pinned


def test_every_import_of_the_harness_and_the_tasks_is_pinned_by_the_lock() -> None:
    assert LOCK is not None
    providers = importlib.metadata.packages_distributions()
    unpinned = {}
    for module, files in sorted(third_party_imports().items()):
        dists = providers.get(module)
        if not dists:
            unpinned[module] = f"no installed distribution provides it ({sorted(files)[0]})"
        elif not any(canonical(d) in LOCK.pins for d in dists):
            unpinned[module] = f"{', '.join(dists)} is not in the lock ({sorted(files)[0]})"
    assert not unpinned, unpinned
    assert {"sklearn", "torch", "castle", "econml", "litellm"} <= set(third_party_imports())  # the scan sees tasks


def test_every_declared_requirement_is_pinned_at_a_version_it_accepts() -> None:
    assert LOCK is not None
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    declared = list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]
    declared += [r.pip for p in sorted((REPO_ROOT / "ml_tasks").glob("*/task.yaml")) for r in load_task(p.parent).requirements]
    problems = []
    for text in declared:
        req = Requirement(text)
        if canonical(req.name) == "researchbench" or (req.marker is not None and not req.marker.evaluate()):
            continue
        pinned = LOCK.pins.get(canonical(req.name))
        if pinned is None or not req.specifier.contains(pinned, prereleases=True):
            problems.append(f"{text}: lock has {pinned}")
    assert not problems, problems


def test_every_builtin_baseline_record_names_the_lock_it_was_measured_under() -> None:
    assert LOCK is not None
    for path in sorted((REPO_ROOT / "ml_tasks").glob("*/task.yaml")):
        spec = load_task(path.parent)
        record = spec.baseline
        if record is None and spec.resources.gpus:
            continue  # a GPU task's record is measured on a GPU (benchmarks/gpu_check.py); none is there yet
        assert record is not None and record.environment is not None, path
        assert record.environment.lock == LOCK.digest, f"{path}: measured under another lock; refresh the records"
        assert record.environment.versions.get("scikit-learn"), path


def test_the_digest_covers_the_pins_only() -> None:
    a = parse_lock("# python: 3.11\nnumpy==2.0.0\nPandas==2.2.0\n")
    b = parse_lock("# a comment\n# python: 3.11\n\npandas==2.2.0  # why\nnumpy==2.0.0\n")
    assert a.pins == {"numpy": "2.0.0", "pandas": "2.2.0"} and a.digest == b.digest
    assert a.digest != parse_lock("numpy==2.0.1\npandas==2.2.0\n").digest
    with pytest.raises(ValueError, match="not an exact pin"):
        parse_lock("numpy>=2\n")


def fake_lock(tmp_path: Path, **pins: str) -> Path:
    path = tmp_path / "lock.txt"
    path.write_text("# python: 3.11\n# platform: linux-x86_64\n" + "".join(f"{n}=={v}\n" for n, v in pins.items()))
    return path


def test_differences_name_each_package_at_another_version(tmp_path: Path) -> None:
    numpy = importlib.metadata.version("numpy")
    lock = parse_lock(fake_lock(tmp_path, numpy="0.0.1", pyyaml=importlib.metadata.version("PyYAML"),
                                surely_not_installed="1.0").read_text())
    assert differences(lock) == [f"numpy {numpy} (lock 0.0.1)"]  # an absent package is not a difference
    assert differences(dataclasses.replace(lock, python="2.7"))[0] == f"Python {lock_module.this_python()} (lock 2.7)"
    env = current_environment({"numpy": numpy, "torch": "not installed"}, lock)
    assert not env.matches_lock and env.versions == {"numpy": numpy} and env.lock == lock.digest


def test_check_names_the_environment_a_record_was_measured_under(tmp_path: Path, monkeypatch) -> None:
    spec = load_task(REPO_ROOT / "ml_tasks" / "semi_supervised")
    assert spec.baseline is not None
    here = importlib.metadata.version("scikit-learn")
    old = dataclasses.replace(spec.baseline, environment=RecordedEnvironment("abc", {"scikit-learn": "1.8.0"}))
    note = lock_module.record_environment_note(dataclasses.replace(spec, baseline=old))
    assert note == f"recorded under scikit-learn 1.8.0, this machine has {here}"
    monkeypatch.setattr(lock_module, "LOCK_PATH", fake_lock(tmp_path, **{"scikit-learn": "0.1"}))
    unrecorded = dataclasses.replace(spec, baseline=dataclasses.replace(spec.baseline, environment=None))
    assert f"scikit-learn {here} (lock 0.1)" in lock_module.record_environment_note(unrecorded)


def test_a_run_in_another_environment_says_so_at_start_and_in_its_summary(tmp_path: Path, monkeypatch) -> None:
    from omegaconf import OmegaConf

    monkeypatch.setattr(lock_module, "LOCK_PATH", fake_lock(tmp_path, numpy="0.0.1"))
    spec = load_task(REPO_ROOT / "ml_tasks" / "semi_supervised")
    prov = provenance(spec, OmegaConf.create({"seed": 0}))
    env = prov["environment"]
    assert env["matches_lock"] is False and env["lock"] == read_lock(tmp_path / "lock.txt").digest
    assert any(d.startswith("numpy ") and d.endswith("(lock 0.0.1)") for d in env["differences"])
    line = environment_line(prov)
    assert line is not None and "\n" not in line and "(lock 0.0.1)" in line
    assert environment_line({"environment": {"lock": "x", "matches_lock": True}}) is None


def test_the_scorer_says_when_it_pools_runs_of_different_environments(tmp_path: Path) -> None:
    steps = [Step("0000", "baseline", "ok", 10.0), Step("0001", "draft", "ok", 6.0, ["0000"])]
    same = {"lock": "aaaa", "matches_lock": True, "versions": {}, "differences": []}
    write_run(tmp_path / "one", "A", "t", 0, steps, baseline_test=12.0, best_test=6.0, environment=same)
    write_run(tmp_path / "one", "A", "t", 1, steps, baseline_test=12.0, best_test=6.0, environment=same)
    assert select_runs(tmp_path / "one", warn=lambda line: None).notes == []
    write_run(tmp_path / "two", "A", "t", 0, steps, baseline_test=12.0, best_test=6.0, environment=same)
    write_run(tmp_path / "two", "A", "t", 1, steps, baseline_test=12.0, best_test=6.0,
              environment={**same, "matches_lock": False, "differences": ["scikit-learn 1.9.1 (lock 1.8.0)"]})
    write_run(tmp_path / "two", "A", "t", 2, steps, baseline_test=12.0, best_test=6.0)
    notes = select_runs(tmp_path / "two", warn=lambda line: None).notes
    assert len(notes) == 1 and "task t come from 3 environments" in notes[0]
    assert "scikit-learn 1.9.1 (lock 1.8.0)" in notes[0] and "unrecorded: 1 run" in notes[0]


MANIFEST = """# a comment that must survive
schema: 2
name: demo
version: "2.0.0"
metric:
  name: acc  # kept

baseline:
  seeds: [0, 1]
  val: [0.5, 0.5]
  test: [0.4, 0.4]

# a comment about budget, which stays
budget:
  steps: 10
"""


def test_the_refresh_rewrites_the_record_bumps_a_moved_task_and_writes_the_changelog(tmp_path: Path) -> None:
    env = {"lock": "abcdef012345", "versions": {"python": "3.11.7", "scikit-learn": "1.9.1"}}
    block = lock_refresh.baseline_block((0, 1), [0.6, 0.6], [0.41, 0.41], env)
    text = lock_refresh.rewrite_manifest(MANIFEST, block, "2.1.0")
    assert text.startswith("# a comment that must survive") and 'version: "2.1.0"' in text
    assert "name: acc  # kept" in text and "\n# a comment about budget, which stays\nbudget:\n  steps: 10\n" in text
    assert "0.5" not in text
    task_dir = tmp_path / "demo"
    task_dir.mkdir()
    (task_dir / "task.yaml").write_text(text)
    import yaml

    raw = yaml.safe_load(text)["baseline"]
    assert raw["val"] == [0.6, 0.6] and raw["environment"] == env
    assert lock_refresh._moved((0.5, 0.5), [0.5, 0.50000001]) is False
    assert lock_refresh._moved((0.5, 0.5), [0.5, 0.6]) and lock_refresh._bump_minor("2.0.3") == "2.1.0"

    old, new = parse_lock("a==1\nb==1\n"), parse_lock("a==2\nb==1\nc==1\n")
    lines = lock_refresh.changelog_lines(old, new, [lock_refresh.Change("demo", "2.0.0", "2.1.0", "baseline moved"),
                                                    lock_refresh.Change("same", "1.0.0", None, "scores unchanged")])
    assert lines[0] == f"- The lock (requirements/lock.txt) refreshed to {new.digest}: a 1 -> 2; added c 1."
    assert len(lines) == 2 and "demo 2.0.0 -> 2.1.0" in lines[1]
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text("# Changelog\n\n## [Unreleased]\n\n### Added\n- x\n\n## [0.1.0]\n- y\n")
    lock_refresh.add_to_changelog(lines, changelog)
    body = changelog.read_text()
    assert body.index("### Changed") < body.index(lines[0]) < body.index("## [0.1.0]")


def test_the_lock_text_drops_editable_installs_and_sorts_pins() -> None:
    text = lock_refresh.lock_text("-e /work/repo\nZeta==1\nalpha==2\nb @ file:///x\n", "3.11", "linux-x86_64")
    lock = parse_lock(text)
    assert lock.pins == {"alpha": "2", "zeta": "1"} and lock.python == "3.11"
    assert text.splitlines()[-2:] == ["alpha==2", "Zeta==1"]
