"""Task variants (`extends:`): the same task code at another scale, declared by a small manifest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.tasks.manifest import load_task
from researchbench.benchmark.tasks.workspace import prepare

TOY = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "toy"


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


def test_a_gpu_variants_cpu_fallback_is_its_code_on_the_base_lite_data(tmp_path: Path) -> None:
    from researchbench.benchmark.authoring.task_check import check_task
    from researchbench.benchmark.executors.local import LocalExecutor, LocalExecutorConfig
    from researchbench.benchmark.tasks.variants import cpu_fallback

    folder = _variant(tmp_path, {"name": "toy_big", "version": "1.0.0", "resources": {"gpus": 1},
                                 "prepare": ["{python}", "{task_dir}/prepare.py", "{workspace}", "--big"],
                                 "budget": {"step_timeout_s": 900}}, params={"slope": 2.0})
    spec = load_task(folder)
    fallback = cpu_fallback(spec)
    base = load_task(tmp_path / "toy")
    assert fallback.name == "toy_big-cpu" and fallback.resources == base.resources and fallback.prepare == base.prepare
    assert fallback.budget == base.budget and fallback.checks == base.checks
    assert fallback.code_overlay == spec.code_overlay
    with pytest.raises(UserError, match="not a variant"):
        cpu_fallback(base)
    with LocalExecutor(LocalExecutorConfig()) as executor:
        report = check_task(folder, executor=executor, root=tmp_path / "ws", val_seconds_limit=None, fallback=True,
                            skip=("label-probe", "description", "trivial"))  # the toy task has neither
    assert report.ok, report.table()
    assert report.task == "toy_big-cpu"
    val = next(row for row in report.rows if row.name == "baseline-val")
    assert val.detail.startswith("mse 1.25 ")  # the variant's slope 2 on the base's y = 3x at x = 0.5, 1.5


def test_setup_skips_gpu_variants_without_a_gpu_unless_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture) -> None:
    import importlib.util

    _variant(tmp_path, {"name": "toy_big", "version": "1.0.0", "resources": {"gpus": 1}})
    module_spec = importlib.util.spec_from_file_location("setup_cli", Path(__file__).resolve().parents[2] / "setup.py")
    setup_cli = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(setup_cli)
    monkeypatch.setenv("RESEARCHBENCH_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU visible, whatever this machine has
    tasks = {"toy": tmp_path / "toy", "toy_big": tmp_path / "toy_big"}
    setup_cli._setup(list(tasks), tasks, force=False, skip_requirements=True, every=True)  # --all, --suite
    assert "toy_big: skipped (it needs 1 GPU and none is visible here" in capsys.readouterr().out
    assert (tmp_path / "ws" / "toy").is_dir() and not (tmp_path / "ws" / "toy_big").exists()
    setup_cli._setup(["toy_big"], tasks, force=False, skip_requirements=True)  # --task toy_big
    assert (tmp_path / "ws" / "toy_big").is_dir()
