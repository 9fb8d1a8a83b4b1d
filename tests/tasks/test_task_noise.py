"""The manifest's `noise` block (issue 25): its validation (one line per bad value), every built-in task
measured on its current version, the half-sampling estimator, the block writer, and `setup.py
--measure-noise` end to end on a task made from the tabular template."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import run_cli
from task_kit import TASK_NAMES
from test_task_manifest import VALID, expect_error, write_task

from researchbench.benchmark.authoring.half_sample import half_sample, units_of
from researchbench.benchmark.authoring.noise_block import write_block
from researchbench.benchmark.tasks.manifest import load_task
from researchbench.benchmark.tasks.noise import Noise, UnitFiles, noise_fact, sd_text

REPO = Path(__file__).resolve().parents[2]
BUILT_IN = TASK_NAMES  # a GPU-scale variant's noise is measured on a GPU (tests/ml_tasks/test_gpu_suite.py)

NOISE: dict[str, Any] = {
    "unit": "images",
    "units": {"labels": ["{phase}.csv"], "key": ["id"], "strata": ["env"]},
    "measured": {"version": "1", "seeds": [0, 1, 2], "draws": 100},
    "val": {"size": 359, "sampling_sd": 0.0123, "seed_sd": 0.0, "parts": {"a": 180, "b": 179}},
    "test": {"size": 360, "sampling_sd": 0.0241, "seed_sd": 0.001, "parts": {"a": 180, "b": 180}},
}


def with_noise(mutate: Callable[[dict], None] = lambda n: None) -> dict:
    raw = copy.deepcopy(VALID)
    raw["noise"] = copy.deepcopy(NOISE)
    mutate(raw["noise"])
    return raw


def test_a_measured_block_loads_and_a_manifest_without_one_still_does(tmp_path: Path) -> None:
    noise = load_task(write_task(tmp_path, with_noise())).noise
    assert noise is not None and noise.is_measured and noise.units.strata == ("env",)
    assert noise.val.size == 359 and noise.val.sd == 0.0123 and noise.test.sd == 0.0241
    assert load_task(write_task(tmp_path, VALID)).noise is None  # optional: older and third-party manifests
    declared = with_noise(lambda n: [n.pop(k) for k in ("measured", "val", "test")])  # declared, not measured yet
    assert not load_task(write_task(tmp_path, declared)).noise.is_measured


@pytest.mark.parametrize("mutate, key", [
    (lambda n: n.pop("unit"), "noise.unit"),
    (lambda n: n.update(unit=""), "noise.unit"),
    (lambda n: n.pop("units"), "noise.units"),
    (lambda n: n.update(extra=1), "noise.extra"),
    (lambda n: n["units"].update(labels=["val.csv"]), "noise.units.labels"),
    (lambda n: n["units"].update(labels=["{phase}.json"]), "noise.units.labels"),
    (lambda n: n["units"].update(labels=["../{phase}.csv"]), "noise.units.labels"),
    (lambda n: n["units"].update(labels=["{phase}.csv", "{phase}.npz"]), "noise.units.labels"),
    (lambda n: n["units"].update(labels=["{phase}_{seed}.csv"]), "noise.units.labels"),
    (lambda n: n["units"].pop("key"), "noise.units.key"),
    (lambda n: n["units"].update(labels=["eval_{phase}.npz"]), "noise.units"),
    (lambda n: n.update(half_samples="yes please"), "noise.half_samples"),
    (lambda n: n.pop("measured"), "noise.measured"),
    (lambda n: n.pop("test"), "noise.test"),
    (lambda n: n["val"].update(size=0), "noise.val.size"),
    (lambda n: n["val"].update(size=3.5), "noise.val.size"),
    (lambda n: n["val"].update(sampling_sd=-0.1), "noise.val.sampling_sd"),
    (lambda n: n["val"].update(sampling_sd=float("nan")), "noise.val.sampling_sd"),
    (lambda n: n["val"].update(sampling_sd="small"), "noise.val.sampling_sd"),
    (lambda n: [n["test"].pop(k) for k in ("sampling_sd", "seed_sd")], "noise.test"),
    (lambda n: n["val"]["parts"].update(a=1), "noise.val.parts"),
    (lambda n: n["measured"].update(seeds=[0]), "noise.val.seed_sd"),
    (lambda n: n["measured"].update(draws=0), "noise.val.sampling_sd"),
    (lambda n: n.update(half_samples=False), "noise.val.sampling_sd"),
    (lambda n: n["measured"].update(version=2), "noise.measured.version"),
    (lambda n: n["measured"].pop("draws"), "noise.measured.draws"),
])
def test_a_bad_noise_value_is_one_line_naming_its_key(tmp_path: Path, mutate: Callable[[dict], None], key: str) -> None:
    expect_error(tmp_path, with_noise(mutate), key=key)


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_built_in_task_states_its_noise_measured_on_its_current_version(name: str) -> None:
    spec = load_task(REPO / "ml_tasks" / name)
    assert spec.noise is not None and spec.noise.is_measured, f"run `python setup.py --measure-noise {name}`"
    assert spec.noise.measured.version == spec.version, (
        f"{name}'s noise was measured on version {spec.noise.measured.version}, the task is {spec.version}: "
        f"run `python setup.py --measure-noise {name}` and commit its task.yaml")
    assert spec.noise.val.sampling_sd is not None and spec.noise.test.sampling_sd is not None


def test_the_prompt_fact_states_sizes_unit_and_spread(tmp_path: Path) -> None:
    fact = noise_fact(load_task(write_task(tmp_path, with_noise())).noise, "accuracy")
    # both sizes with their unit, the metric, the val sd, twice it, how it was measured
    for part in ("359 images", "360 images", "accuracy", "±0.012", "0.025", "seeds 0-2", "spread is the baseline's"):
        assert part in fact, (part, fact)
    assert "0.024" not in fact  # the test sd: a statistic of hidden-test predictions
    assert "180" not in fact  # strata of label columns are counts of hidden labels: not told
    npz = load_task(write_task(tmp_path / "npz", with_noise(lambda n: n.update(units={"labels": ["eval_{phase}.npz"]}))))
    assert "359 images (a: 180; b: 179)" in noise_fact(npz.noise, "accuracy")  # an .npz file's parts: its make-up
    assert noise_fact(None, "accuracy") == ""
    # a baseline that scores the same on every half and seed (adversarial_robustness's 0) gives no scale:
    # the sentence says so instead of calling differences below "0 apart" noise
    flat = load_task(write_task(tmp_path / "flat", with_noise(lambda n: [n[p].update(sampling_sd=0.0, seed_sd=0.0)
                                                                         for p in ("val", "test")])))
    flat_fact = noise_fact(flat.noise, "robust_accuracy")
    assert "did not vary" in flat_fact and "within noise" not in flat_fact and "359 images" in flat_fact
    assert [sd_text(v) for v in (0.0, 0.01234, 1.26, 123.4)] == ["0", "0.012", "1.3", "123"]  # never an exponent


# -- the estimator -------------------------------------------------------------------------------------------

def _accuracy(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
    labels = pd.read_csv(labels_dir / f"{phase}.csv")
    pred = pd.read_csv(predictions_dir / "predictions.csv")
    merged = labels.merge(pred, on="id", validate="one_to_one")
    assert len(merged) == len(labels) == len(pred)  # every expected id exactly once, as real evaluators insist
    return {"accuracy": float((merged["label"] == merged["pred"]).mean())}


def _binary_task(root: Path, n: int, p: float, seed: int = 0) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    labels, outputs = root / "labels", root / "outputs"
    labels.mkdir(parents=True)
    outputs.mkdir()
    y = rng.integers(0, 2, n)
    right = rng.random(n) < p
    ids = rng.permutation(10 * n)[:n]
    pd.DataFrame({"id": ids, "label": y, "env": np.arange(n) % 2}).to_csv(labels / "val.csv", index=False)
    pd.DataFrame({"id": ids, "pred": np.where(right, y, 1 - y)}).to_csv(outputs / "predictions.csv", index=False)
    return labels, outputs


def test_half_samples_estimate_the_full_sets_standard_error(tmp_path: Path) -> None:
    labels, outputs = _binary_task(tmp_path, 300, 0.7)
    files = UnitFiles(labels=("{phase}.csv",), key=("id",), strata=("env",))
    result = half_sample(_accuracy, "accuracy", files, "val", labels, outputs, 150, tmp_path / "half")
    binomial = math.sqrt(result.full * (1 - result.full) / 300)
    assert result.size == 300 and result.parts == {"env=0": 150, "env=1": 150} and not result.exhaustive
    assert len(result.scores) == 150 and abs(result.sd / binomial - 1) < 0.2, (result.sd, binomial)


def test_few_units_are_half_sampled_exhaustively_and_npz_rows_are_units(tmp_path: Path) -> None:
    labels, outputs = tmp_path / "labels", tmp_path / "outputs"
    labels.mkdir()
    outputs.mkdir()
    np.savez(labels / "eval_val.npz", a_x=np.arange(4.0), a_y=np.array([1, 1, 0, 0]), b_y=np.array([1, 0]))

    def share(phase: str, predictions_dir: Path, labels_dir: Path) -> dict[str, float]:
        with np.load(labels_dir / f"eval_{phase}.npz") as data:
            assert len(data["a_x"]) == len(data["a_y"])  # one part's arrays keep the same rows
            return {"share": float(np.concatenate([data["a_y"], data["b_y"]]).mean())}

    files = UnitFiles(labels=("eval_{phase}.npz",))
    assert units_of(files, "val", labels).parts() == {"a": 4, "b": 2}
    result = half_sample(share, "share", files, "val", labels, outputs, 100, tmp_path / "half")
    assert result.exhaustive and len(result.scores) == math.comb(4, 2) * math.comb(2, 1) and result.full == 0.5


# -- writing the block ---------------------------------------------------------------------------------------

def test_the_block_goes_after_the_baseline_and_is_replaced_in_place(tmp_path: Path) -> None:
    raw: dict[str, Any] = {}
    for key, value in VALID.items():
        raw[key] = value
        if key == "metric":
            raw["baseline"] = {"seeds": [0], "val": [1.0], "test": [1.0]}
    text = yaml.safe_dump(raw, sort_keys=False, default_flow_style=None).replace("\nbudget:", "\n\n# the budget\nbudget:")
    task = write_task(tmp_path, text=text)
    declared = Noise(unit="rows", units=UnitFiles(labels=("{phase}.csv",), key=("id",)))
    assert write_block(task / "task.yaml", declared, "mini") == "added"
    measured = load_task(write_task(tmp_path / "other", with_noise())).noise
    assert write_block(task / "task.yaml", measured, "mini") == "replaced"
    assert load_task(task).noise == measured
    lines = (task / "task.yaml").read_text().splitlines()
    start = lines.index("noise:")
    assert lines[start - 4] == "  test: [1.0]" and lines[start - 3] == ""  # right after the baseline entry
    # nothing else changed: without its two comment lines, six lines and the blank line after, the file is as it was
    assert "\n".join(lines[:start - 2] + lines[start + 7:]) + "\n" == text


# -- the command, end to end ---------------------------------------------------------------------------------

def test_measure_noise_runs_the_baseline_and_writes_a_block_that_loads(tmp_path: Path) -> None:
    """`setup.py --new` then `--measure-noise` on the new task: the sandboxed baseline on one seed, half-samples
    of its predictions, and a block written into its task.yaml that the loader accepts."""
    env = {"RESEARCHBENCH_TASKS_PATH": str(tmp_path / "tasks"), "RESEARCHBENCH_WORKSPACE": str(tmp_path / "ws")}
    assert run_cli("--new", "nz", "--dest", str(tmp_path / "tasks"), script="setup.py", env=env).returncode == 0
    manifest = tmp_path / "tasks" / "nz" / "task.yaml"
    before = load_task(manifest.parent).noise
    result = run_cli("--measure-noise", "nz", "--seeds", "0", "--draws", "12", "--skip-requirements",
                     script="setup.py", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    noise = load_task(manifest.parent).noise
    assert noise.units == before.units and noise.measured.seeds == (0,) and noise.measured.draws == 12
    assert (noise.val.size, noise.test.size) == (113, 115)  # the template's split of the breast-cancer table
    assert 0 < noise.val.sampling_sd < 0.1 and noise.val.seed_sd is None  # one seed: no seed-to-seed sd
    assert f"val 113 / test 115 {noise.unit}" in result.stdout and "replaced the noise block" in result.stdout


def test_measure_noise_refuses_in_one_line_what_it_cannot_measure() -> None:
    no_block = run_cli("--measure-noise", "toy", "--skip-requirements", script="setup.py")  # tests/fixtures/tasks/toy
    assert no_block.returncode == 2 and no_block.stderr.count("\n") == 1, no_block.stderr
    assert "toy: task.yaml has no noise block" in no_block.stderr
    stray = run_cli("--list", "--draws", "5", script="setup.py")
    assert stray.returncode == 2 and "go with --measure-noise" in stray.stderr
