"""The task manifest schema: every malformed task.yaml is one UserError line naming the file and the key.

Each case starts from a valid manifest, breaks one thing, and checks the message, so a schema change
that turns a clear error into a traceback or a silent default fails here.
"""

from __future__ import annotations

import copy
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.tasks.manifest import PLACEHOLDERS, load_task, render

REPO = Path(__file__).resolve().parents[2]

VALID: dict[str, Any] = {
    "schema": 2,
    "name": "mini",
    "version": "1",
    "domain": "testing",
    "description": "description.md",
    "code": "baseline",
    "editable": ["model.py", "params.json"],
    "metric": {"name": "mse", "direction": "lower", "floor": 2.0, "target": 0.5, "rationale": "why"},
    "budget": {"steps": 3, "compute_hours": 1, "step_timeout_s": 10, "usd": 0},
    "phases": {
        "val": ["{python}", "driver.py", "--data", "{data}", "--out", "{output}"],
        "test": ["{python}", "driver.py", "--data", "{data}", "--test-inputs", "{test_inputs}", "--out", "{output}"],
    },
    "evaluator": ["{python}", "{task_dir}/evaluate.py", "{output}", "{labels}", "{metrics}", "{phase}"],
    "outputs": ["predictions.csv"],
    "prepare": ["{python}", "{task_dir}/prepare.py", "{workspace}"],
    "data": {"public": "public", "test_inputs": "test_inputs", "labels": "labels"},
    "requirements": ["numpy>=1.25", {"pip": "causalml>=0.18", "no_deps": True}],
    "resources": {"gpus": 0, "cpus": 2, "memory_gb": 4},
    "knobs": {"file": "params.json", "space": {
        "lr": {"type": "float", "low": 0.001, "high": 0.1, "log": True},
        "kind": {"type": "categorical", "choices": ["a", "b"]},
    }},
}


def write_task(tmp_path: Path, raw: Any = None, text: str | None = None) -> Path:
    task_dir = tmp_path / "mini"
    (task_dir / "baseline").mkdir(parents=True, exist_ok=True)
    (task_dir / "description.md").write_text("# mini\n")
    (task_dir / "baseline" / "model.py").write_text("")
    (task_dir / "task.yaml").write_text(text if text is not None else yaml.safe_dump(raw, sort_keys=False))
    return task_dir


def broken(mutate: Callable[[dict], None]) -> dict:
    raw = copy.deepcopy(VALID)
    mutate(raw)
    return raw


def expect_error(tmp_path: Path, raw: Any = None, *, text: str | None = None, key: str = "") -> str:
    task_dir = write_task(tmp_path, raw, text)
    with pytest.raises(UserError) as info:
        load_task(task_dir)
    message = str(info.value)
    assert "\n" not in message, message
    assert str(task_dir / "task.yaml") in message, message
    if key:
        assert f"'{key}'" in message, message
    return message


def test_valid_manifest_loads(tmp_path: Path) -> None:
    spec = load_task(write_task(tmp_path, VALID))
    assert spec.name == "mini" and spec.metric.direction == "lower"
    assert spec.budget.compute_hours == 1.0 and isinstance(spec.budget.compute_hours, float)
    assert [r.no_deps for r in spec.requirements] == [False, True]
    assert spec.knobs is not None and spec.knobs.space["lr"].log
    assert spec.is_editable("params.json") and not spec.is_editable("driver.py")


def test_causality_manifest_loads_and_renders() -> None:
    spec = load_task(REPO / "ml_tasks" / "causality")
    assert (spec.name, spec.metric.name, spec.metric.direction) == ("causality", "pehe", "lower")
    assert spec.metric.better(spec.metric.target, spec.metric.floor)
    assert spec.editable == ("model.py", "params.json")
    assert spec.resources.gpus == 0 and spec.resources.cpus == 2
    assert any(r.pip.startswith("causalml") and r.no_deps for r in spec.requirements)
    assert not any(r.pip.split(">")[0].split("=")[0].strip() == "xgboost" for r in spec.requirements)
    values = dict(python="py", code="c", data="d", output="o", phase="val", test_inputs="ti")
    assert render(spec.phases["val"], **values) == ["py", "driver.py", "--phase", "val", "--data", "d", "--out", "o"]
    assert "ti" in render(spec.phases["test"], **values)
    # the knob space covers the baseline's params.json, so a tuner can start from the baseline
    import json

    params = json.loads((spec.code_dir / spec.knobs.file).read_text())
    for name, knob in spec.knobs.space.items():
        value = params[name]
        if knob.type == "categorical":
            assert value in knob.choices, name
        else:
            assert knob.low <= value <= knob.high, name


def test_malformed_yaml(tmp_path: Path) -> None:
    message = expect_error(tmp_path, text="schema: 2\nname: [unclosed\n")
    assert "not valid YAML" in message and "line" in message


def test_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="task.yaml does not exist"):
        load_task(tmp_path)


def test_top_level_not_a_mapping(tmp_path: Path) -> None:
    assert "must be a mapping" in expect_error(tmp_path, text="- a\n- b\n")


@pytest.mark.parametrize("mutate, key", [
    (lambda r: r.update(colour="red"), "colour"),
    (lambda r: r["metric"].update(scale=2), "metric.scale"),
    (lambda r: r["budget"].update(gpu_hours=1), "budget.gpu_hours"),
    (lambda r: r["data"].update(extra="x"), "data.extra"),
    (lambda r: r["resources"].update(disk_tb=1), "resources.disk_tb"),
    (lambda r: r.update(evaluation={"timeout": 3}), "evaluation.timeout"),
    (lambda r: r["knobs"]["space"]["lr"].update(step=1), "knobs.space.lr.step"),
    (lambda r: r["requirements"].append({"pip": "x", "extras": "y"}), "requirements[2].extras"),
])
def test_unknown_key(tmp_path: Path, mutate: Callable[[dict], None], key: str) -> None:
    assert "is not a known key" in expect_error(tmp_path, broken(mutate), key=key)


@pytest.mark.parametrize("mutate, key", [
    (lambda r: r.pop("metric"), "metric"),
    (lambda r: r["metric"].pop("floor"), "metric.floor"),
    (lambda r: r["budget"].pop("steps"), "budget.steps"),
    (lambda r: r["phases"].pop("test"), "phases.test"),
    (lambda r: r["data"].pop("labels"), "data.labels"),
    (lambda r: r.pop("evaluator"), "evaluator"),
    (lambda r: r.pop("outputs"), "outputs"),
])
def test_missing_required_key(tmp_path: Path, mutate: Callable[[dict], None], key: str) -> None:
    assert "is required" in expect_error(tmp_path, broken(mutate), key=key)


@pytest.mark.parametrize("mutate, key", [
    (lambda r: r["budget"].update(steps="ten"), "budget.steps"),
    (lambda r: r["budget"].update(steps=True), "budget.steps"),
    (lambda r: r["metric"].update(floor="low"), "metric.floor"),
    (lambda r: r.update(name=3), "name"),
    (lambda r: r["resources"].update(cpus=1.5), "resources.cpus"),
    (lambda r: r["requirements"].append({"pip": "x", "no_deps": "yes"}), "requirements[2].no_deps"),
    (lambda r: r.update(requirements="numpy"), "requirements"),
    (lambda r: r.update(editable="model.py"), "editable"),
    (lambda r: r.update(metric=[1, 2]), "metric"),
    (lambda r: r["phases"].update(val="python driver.py"), "phases.val"),
    (lambda r: r.update(prepare=[]), "prepare"),
    (lambda r: r["knobs"]["space"]["lr"].update(low="tiny"), "knobs.space.lr.low"),
    (lambda r: r["knobs"]["space"]["lr"].update(log="yes"), "knobs.space.lr.log"),
    (lambda r: r["knobs"]["space"]["kind"].update(choices="ab"), "knobs.space.kind.choices"),
    (lambda r: r.update(outputs="predictions.csv"), "outputs"),
    (lambda r: r.update(outputs=["../labels/test.csv"]), "outputs"),
    (lambda r: r.update(outputs=["/etc/passwd"]), "outputs"),
    (lambda r: r.update(outputs=["*.csv"]), "outputs"),
    (lambda r: r["resources"].update(disk_gb=0), "resources.disk_gb"),
    (lambda r: r.update(evaluation={"timeout_s": -1}), "evaluation"),
    (lambda r: r.update(evaluation={"memory_gb": "lots"}), "evaluation.memory_gb"),
])
def test_wrong_type(tmp_path: Path, mutate: Callable[[dict], None], key: str) -> None:
    expect_error(tmp_path, broken(mutate), key=key)


@pytest.mark.parametrize("direction", ["down", "LOWER", "max"])
def test_bad_direction(tmp_path: Path, direction: str) -> None:
    message = expect_error(tmp_path, broken(lambda r: r["metric"].update(direction=direction)), key="metric.direction")
    assert "'lower' or 'higher'" in message


@pytest.mark.parametrize("direction, floor, target", [("lower", 1.0, 2.0), ("higher", 0.9, 0.5), ("lower", 1.0, 1.0)])
def test_target_must_beat_floor(tmp_path: Path, direction: str, floor: float, target: float) -> None:
    raw = broken(lambda r: r["metric"].update(direction=direction, floor=floor, target=target))
    expect_error(tmp_path, raw, key="metric.target")


@pytest.mark.parametrize("phase, placeholder", [
    ("val", "labels"), ("val", "test_inputs"), ("val", "metrics"), ("val", "task_dir"),
    ("test", "labels"), ("test", "metrics"),
])
def test_agent_phases_cannot_see_hidden_data(tmp_path: Path, phase: str, placeholder: str) -> None:
    raw = broken(lambda r: r["phases"][phase].append(f"--x={{{placeholder}}}"))
    message = expect_error(tmp_path, raw, key=f"phases.{phase}")
    assert f"{{{placeholder}}}" in message and "not allowed" in message


@pytest.mark.parametrize("key, placeholder", [("evaluator", "test_inputs"), ("evaluator", "code"),
                                              ("prepare", "labels"), ("prepare", "output")])
def test_harness_commands_placeholders(tmp_path: Path, key: str, placeholder: str) -> None:
    raw = broken(lambda r: r[key].append(f"{{{placeholder}}}"))
    expect_error(tmp_path, raw, key=key)


def test_placeholder_table_keeps_labels_out_of_agent_phases() -> None:
    for phase in ("val", "test"):
        assert not PLACEHOLDERS[phase] & {"labels", "metrics", "task_dir"}
    assert "test_inputs" not in PLACEHOLDERS["val"]


def test_malformed_placeholder(tmp_path: Path) -> None:
    raw = broken(lambda r: r["phases"]["val"].append("{python"))
    assert "malformed placeholder" in expect_error(tmp_path, raw, key="phases.val")


def test_unknown_phase(tmp_path: Path) -> None:
    raw = broken(lambda r: r["phases"].update(train=["{python}", "x"]))
    expect_error(tmp_path, raw, key="phases.train")


@pytest.mark.parametrize("name", ["Causality", "my task", "-x", "a/b"])
def test_bad_name(tmp_path: Path, name: str) -> None:
    expect_error(tmp_path, broken(lambda r: r.update(name=name)), key="name")


def test_schema_version(tmp_path: Path) -> None:
    assert "reads schema 2" in expect_error(tmp_path, broken(lambda r: r.update(schema=3)), key="schema")


def test_budget_bounds(tmp_path: Path) -> None:
    expect_error(tmp_path, broken(lambda r: r["budget"].update(steps=0)), key="budget")


def test_a_description_states_its_budget_through_placeholders_rendered_from_the_given_budget(tmp_path) -> None:
    task_dir = write_task(tmp_path, VALID)
    (task_dir / "description.md").write_text("{{budget.steps}} experiments, {{ budget.step_timeout_s }} CPU-seconds "
                                             "per run (the final test run {{budget.test_timeout_s}}).\n")
    spec = load_task(task_dir)
    assert spec.description_text() == "3 experiments, 10 CPU-seconds per run (the final test run 20).\n"
    run = replace(spec.budget, steps=7, step_timeout_s=30.0, test_timeout_s=45.0)
    assert spec.description_text(run) == "7 experiments, 30 CPU-seconds per run (the final test run 45).\n"
    (task_dir / "description.md").write_text("you have {{budget.experiments}} tries\n")
    with pytest.raises(UserError) as info:
        load_task(task_dir)
    message = str(info.value)
    assert "\n" not in message and "'description'" in message
    assert "{{budget.experiments}}" in message and "steps" in message


def test_the_runs_budget_overrides_cover_every_budget_field() -> None:
    """The manifest's Budget lists the fields once; the run's overrides (a Hydra schema) must name each."""
    from researchbench.benchmark.run.config import BudgetConfig
    from researchbench.benchmark.tasks.manifest import BUDGET_FIELDS

    assert set(BUDGET_FIELDS) <= {f.name for f in fields(BudgetConfig)}


@pytest.mark.parametrize("mutate, key", [
    (lambda r: r["knobs"]["space"]["lr"].update(type="bool"), "knobs.space.lr.type"),
    (lambda r: r["knobs"]["space"]["kind"].update(choices=[]), "knobs.space.kind.choices"),
    (lambda r: r["knobs"]["space"]["lr"].update(low=1.0, high=0.1), "knobs.space.lr"),
    (lambda r: r["knobs"].update(file="driver.py"), "knobs.file"),
    (lambda r: r["knobs"].pop("space"), "knobs.space"),
])
def test_bad_knobs(tmp_path: Path, mutate: Callable[[dict], None], key: str) -> None:
    expect_error(tmp_path, broken(mutate), key=key)


@pytest.mark.parametrize("field", ["description", "code"])
def test_referenced_paths_must_exist(tmp_path: Path, field: str) -> None:
    expect_error(tmp_path, broken(lambda r: r.update({field: "nowhere"})), key=field)


def test_optional_record_fields_load_and_are_checked(tmp_path):
    """best_possible, the baseline's per-seed record and the trivial-predictor overlays."""
    import shutil

    import yaml

    from researchbench.benchmark.tasks.manifest import load_task

    src = Path(__file__).parents[1] / "fixtures" / "tasks" / "toy"
    task = tmp_path / "toy"
    shutil.copytree(src, task)
    raw = yaml.safe_load((task / "task.yaml").read_text())
    (task / "trivial" / "constant").mkdir(parents=True)
    raw["metric"]["best_possible"] = raw["metric"]["target"]
    raw["baseline"] = {"seeds": [0, 1], "val": [1.0, 2.0], "test": [1.5, 2.5]}
    raw["checks"] = {"trivial": ["trivial/constant"]}
    raw["phases"]["val"] = raw["phases"]["val"] + ["--seed", "{seed}"]
    (task / "task.yaml").write_text(yaml.safe_dump(raw))
    spec = load_task(task)
    assert spec.metric.best_possible == raw["metric"]["target"]
    assert spec.baseline.seeds == (0, 1) and spec.baseline.test == (1.5, 2.5)
    assert spec.checks.trivial == ("trivial/constant",) and spec.checks.reference_score is None
    # A target that is an oracle agent code cannot run: the reference must reach checks.reference_score,
    # which lies between the floor and the target.
    (task / "reference").mkdir()
    floor, target = raw["metric"]["floor"], raw["metric"]["target"]
    middle = (floor + target) / 2
    with_reference = dict(raw, checks={"trivial": ["trivial/constant"], "reference": "reference"})
    (task / "task.yaml").write_text(yaml.safe_dump(dict(with_reference, checks={**with_reference["checks"],
                                                                               "reference_score": middle})))
    assert load_task(task).checks.reference_score == middle

    for bad, needle in ((dict(raw, baseline={"seeds": [0, 1], "val": [1.0], "test": [1.0, 2.0]}), "baseline"),
                        (dict(raw, checks={"trivial": ["missing"]}), "checks.trivial"),
                        (dict(raw, checks={"reference_score": middle}), "checks.reference_score"),
                        (dict(raw, checks={"reference": "reference", "reference_score": floor}), "checks.reference_score"),
                        (dict(raw, checks={"reference": "reference", "reference_score": 2 * target - floor}),
                         "checks.reference_score"),
                        (dict(raw, metric=dict(raw["metric"], best_possible=raw["metric"]["floor"])),
                         "metric.best_possible")):
        (task / "task.yaml").write_text(yaml.safe_dump(bad))
        with pytest.raises(UserError, match=needle):
            load_task(task)


def test_tie_breaks_load_in_order_and_rank_nodes_equal_on_the_primary(tmp_path: Path) -> None:
    """Issue 27 (mcts on ood_detection): nodes equal on a discrete primary went silently to the earliest;
    a task's declared secondary metrics now rank them, in the order given, each with its direction."""
    from types import SimpleNamespace

    raw = broken(lambda r: r["metric"].update(tie_breaks={"mae": "lower", "r2": "higher"}))
    metric = load_task(write_task(tmp_path, raw)).metric
    assert metric.tie_breaks == (("mae", "lower"), ("r2", "higher"))

    def node(mse: float | None, **metrics: float) -> SimpleNamespace:
        return SimpleNamespace(primary=mse, metrics={"mse": mse, **metrics})

    assert metric.outranks(node(0.9), node(1.0, mae=0.1)) and not metric.outranks(node(1.0, mae=0.1), node(0.9))
    assert metric.outranks(node(1.0, mae=0.1, r2=0.0), node(1.0, mae=0.2, r2=0.9))  # the first tie-break decides
    assert metric.outranks(node(1.0, mae=0.1, r2=0.9), node(1.0, mae=0.1, r2=0.5))  # then the next
    assert not metric.outranks(node(1.0, mae=0.1, r2=0.9), node(1.0, mae=0.1, r2=0.9))  # a full tie: no rank
    assert not metric.outranks(node(1.0, r2=0.9), node(1.0, mae=0.1))  # a tie-break one side lacks ends it
    assert not metric.outranks(node(None), node(1.0)) and not metric.outranks(node(1.0), node(None))


@pytest.mark.parametrize("tie_breaks, key", [({"mse": "lower"}, "metric.tie_breaks"),  # the primary itself
                                             ({"mae": "down"}, "metric.tie_breaks.mae"),
                                             (["mae"], "metric.tie_breaks")])
def test_a_malformed_tie_break_is_one_line_naming_its_key(tmp_path: Path, tie_breaks: Any, key: str) -> None:
    expect_error(tmp_path, broken(lambda r: r["metric"].update(tie_breaks=tie_breaks)), key=key)


def test_seed_placeholder_carries_the_runs_seed(toy, tmp_path):
    """A phase that asks for {seed} gets the run's seed, as a plain argument."""
    from dataclasses import replace

    from researchbench.benchmark.run.experiment import phase_job

    spec = replace(toy.spec, phases={**toy.spec.phases, "val": ("{python}", "driver.py", "--seed", "{seed}")})
    job = phase_job(replace(toy, spec=spec), "val", tmp_path / "scratch" / "0001", 5.0, seed=7)
    assert job.argv[-2:] == ("--seed", "7")


def test_every_built_in_description_states_its_budget_only_through_placeholders() -> None:
    """A run with other limits must read its own numbers: no description types the manifest's step limit or
    experiment count (the numbers a run's overrides change), and each states its step limit."""
    from researchbench.benchmark.plugins.manager import get_registry

    built_in = Path(__file__).resolve().parents[2] / "ml_tasks"
    for name, path in sorted(get_registry().tasks.items()):
        if Path(path).resolve().parent != built_in:
            continue  # the tests' own fixture tasks
        spec = load_task(path)
        raw = (spec.task_dir / spec.description).read_text()
        assert "{{budget.step_timeout_s}}" in raw, f"{name}: the description does not state its step limit"
        run = replace(spec.budget, steps=spec.budget.steps + 7, step_timeout_s=spec.budget.step_timeout_s + 7.0)
        text = spec.description_text(run)
        assert f"{run.step_timeout_s:g} " in text and f"limit of {spec.budget.step_timeout_s:g} " not in text, name
        assert f"{spec.budget.steps} experiments" not in text, f"{name}: types the manifest's experiment count"
