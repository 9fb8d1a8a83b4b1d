"""Task variants (`extends:`): the same task code at another scale, declared by a small manifest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from benchmark.common.errors import UserError
from benchmark.tasks.manifest import load_task
from benchmark.tasks.workspace import prepare

TOY = Path(__file__).resolve().parent / "fixtures" / "tasks" / "toy"


def _variant(tmp_path: Path, manifest: dict, params: dict | None = None, description: str | None = None) -> Path:
    """A copy of the toy task beside a variant folder `toy_big` holding `manifest` (and its own files)."""
    if not (tmp_path / "toy").exists():
        shutil.copytree(TOY, tmp_path / "toy")
    folder = tmp_path / "toy_big"
    folder.mkdir(exist_ok=True)
    (folder / "task.yaml").write_text(yaml.safe_dump({"schema": 2, "extends": "toy", **manifest}))
    if params is not None:
        (folder / "baseline").mkdir(exist_ok=True)
        (folder / "baseline" / "params.json").write_text(json.dumps(params))
    if description is not None:
        (folder / "description.md").write_text(description)
    return folder


def test_a_variant_merges_over_its_base_and_runs_the_base_code(tmp_path: Path) -> None:
    folder = _variant(tmp_path, {"name": "toy_big", "version": "1.0.0", "resources": {"gpus": 1, "memory_gb": 8},
                                 "metric": {"floor": 30.0, "rationale": "measured at this scale"}},
                      description="the big toy\n")
    spec = load_task(folder)
    base = load_task(tmp_path / "toy")
    assert (spec.name, spec.version, spec.extends) == ("toy_big", "1.0.0", "toy")
    assert spec.resources.gpus == 1 and spec.resources.memory_gb == 8
    assert spec.resources.cpus == base.resources.cpus  # merged key by key, not replaced
    assert spec.metric.floor == 30.0 and spec.metric.target == base.metric.target
    assert spec.phases == base.phases and spec.evaluator == base.evaluator
    assert spec.task_dir == (tmp_path / "toy").resolve()  # {task_dir}: where prepare and evaluate live
    assert spec.home == folder.resolve() and spec.source_dirs == (spec.task_dir, spec.home)
    assert spec.description_text() == "the big toy\n"  # its own description wins
    assert spec.code_overlay is None


def test_a_variant_inherits_no_measurement_of_its_base(tmp_path: Path) -> None:
    base_yaml = tmp_path / "toy" / "task.yaml"
    _variant(tmp_path, {"name": "toy_big", "version": "1.0.0"})
    base_yaml.write_text(base_yaml.read_text() + "baseline: {seeds: [0], val: [1.0], test: [1.0]}\n")
    assert load_task(tmp_path / "toy").baseline is not None
    spec = load_task(tmp_path / "toy_big")
    assert spec.baseline is None and spec.noise is None
    assert spec.description_text() == load_task(tmp_path / "toy").description_text()  # none of its own


def test_a_variant_lays_its_baseline_files_over_the_base_code(tmp_path: Path) -> None:
    spec = load_task(_variant(tmp_path, {"name": "toy_big", "version": "1.0.0"}, params={"slope": 2.5}))
    assert spec.code_overlay == (tmp_path / "toy_big" / "baseline").resolve()
    prepared = prepare(spec, root=tmp_path / "ws", log=lambda *_: None)
    assert json.loads((prepared.baseline_dir / "params.json").read_text()) == {"slope": 2.5}
    assert (prepared.baseline_dir / "driver.py").read_text() == (TOY / "baseline" / "driver.py").read_text()
    # Editing the variant's own file marks its workspace stale, as editing the base code does.
    (tmp_path / "toy_big" / "baseline" / "params.json").write_text('{"slope": 3.5}')
    lines: list[str] = []
    prepare(spec, root=tmp_path / "ws", log=lines.append)
    assert "stale" in lines[0] and json.loads((prepared.baseline_dir / "params.json").read_text()) == {"slope": 3.5}


@pytest.mark.parametrize("manifest, words", [
    ({"name": "toy_big", "version": "1.0.0", "extends": "nope"}, "'extends' names 'nope', which is not a task folder"),
    ({"name": "toy_big", "extends": "toy"}, "'version' is required in a variant"),
    ({"name": "toy_big", "version": "1.0.0", "extends": "../toy"}, "which is not a task folder"),
    ({"name": "toy_big", "version": "1.0.0", "resources": {"gpu": 1}}, "'resources.gpu' is not a known key"),
])
def test_a_bad_variant_is_one_line_naming_the_key(tmp_path: Path, manifest: dict, words: str) -> None:
    folder = _variant(tmp_path, {})
    (folder / "task.yaml").write_text(yaml.safe_dump({"schema": 2, "extends": "toy", **manifest}))
    with pytest.raises(UserError, match=words.replace("(", r"\(").replace(")", r"\)")):
        load_task(folder)


def test_a_variant_of_a_variant_is_refused(tmp_path: Path) -> None:
    _variant(tmp_path, {"name": "toy_big", "version": "1.0.0"})
    second = tmp_path / "toy_bigger"
    second.mkdir()
    (second / "task.yaml").write_text(yaml.safe_dump({"schema": 2, "extends": "toy_big", "name": "toy_bigger",
                                                      "version": "1.0.0"}))
    with pytest.raises(UserError, match="itself a variant"):
        load_task(second)
