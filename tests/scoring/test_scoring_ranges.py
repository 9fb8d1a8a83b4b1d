"""Normalized-improvement ranges: FML-bench's RANGE_META modes against its formula, worked by hand on its
published baselines; our tasks' rows; the improvement curve under each range; FML-bench's edge cases."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from researchbench.benchmark.scoring import process, tables
from researchbench.benchmark.scoring.normalize import fml_ni
from researchbench.benchmark.scoring.ranges import FML_RANGE_META, UNMAPPED, fml_row, manifest_range, resolve
from researchbench.benchmark.scoring.runs import MetricInfo, load_run
from researchbench.benchmark.tasks.manifest import load_task
from scoring_runs import Step, write_run

REPO = Path(__file__).resolve().parents[2]
FML_TASKS = {  # FML-bench's 18 tasks (its TASKS list)
    "Causality_causalml", "Causality_gcastle", "Continual_Learning_continual_learning", "Continual_Learning_pycil",
    "Data_Efficiency_easyfsl", "Data_Efficiency_usb", "Fairness_and_Bias_aif360", "Fairness_fairlearn",
    "Federated_Learning_PFLlib", "Generalization_domainbed", "Generalization_domainbed_officehome",
    "Privacy_opacus", "Privacy_privacymeter", "Representation_Learning_lightly", "Representation_Learning_solo_learn",
    "Robustness_and_Reliability_art", "Robustness_openood", "Unlearning_open_unlearning",
}


@pytest.mark.parametrize("row, baseline, agent, expected", [
    # (lower, best 0, worst 1): absolute reduction of the demographic-parity difference; baseline test 0.1730
    ("Fairness_fairlearn", 0.1730, 0.0500, 0.1730 - 0.0500),
    ("Fairness_fairlearn", 0.1730, 0.2000, 0.0),  # a regression clamps to 0
    ("Fairness_and_Bias_aif360", 0.2399, 0.1399, 0.1000),
    # (lower, best 0, worst baseline): relative reduction 1 - a/b; causalml's ITE MAE 1.3283, gcastle's SHD 71
    ("Causality_causalml", 1.3283, 1.0000, 1 - 1.0 / 1.3283),
    ("Causality_gcastle", 71.0, 50.0, 21 / 71),
    ("Causality_causalml", 0.0, 0.5, math.nan),  # |0 - 0| = 0: FML-bench's NaN
    # (lower, best 0, worst 0.5): privacymeter's |AUC - 0.5| 0.3214
    ("Privacy_privacymeter", 0.3214, 0.2000, 0.1214 / 0.5),
    # (higher, best 1, worst 0): absolute gains; usb 0.0790, openood 0.9302
    ("Data_Efficiency_usb", 0.0790, 0.1000, 0.0210),
    ("Robustness_openood", 0.9302, 0.9500, 0.0198),
    ("Robustness_openood", 0.9302, 0.9000, 0.0),
    # unlearning: -log10 of forget quality first (1.57e-167 -> 166.8041), then a relative reduction
    ("Unlearning_open_unlearning", 1.57e-167, 1e-10, (167 - math.log10(1.57) - 10) / (167 - math.log10(1.57))),
    ("Unlearning_open_unlearning", 1.57e-167, 0.0, math.nan),  # -log10(0) is undefined: NaN, as FML-bench
])
def test_fml_formula_on_its_published_ranges(row: str, baseline: float, agent: float, expected: float) -> None:
    value = fml_ni(fml_row(row), agent, baseline)
    assert (math.isnan(value) and math.isnan(expected)) or value == pytest.approx(expected, abs=1e-12)


def test_no_agent_score_is_credited_the_baseline() -> None:
    assert fml_ni(fml_row("Fairness_fairlearn"), None, 0.1730) == 0.0  # FML-bench: test falls back to the baseline
    assert math.isnan(fml_ni(fml_row("Fairness_fairlearn"), 0.1, None)) and math.isnan(fml_ni(None, 0.1, 0.2))


def test_every_fml_row_is_there_with_its_mode() -> None:
    assert set(FML_RANGE_META) == FML_TASKS
    modes = {name: (d, b, w) for name, (d, b, w) in FML_RANGE_META.items()}
    assert {n for n, m in modes.items() if m == ("lower", 0.0, "baseline")} == {
        "Causality_causalml", "Causality_gcastle", "Unlearning_open_unlearning"}
    assert {n for n, m in modes.items() if m == ("lower", 0.0, 1.0)} == {"Fairness_and_Bias_aif360", "Fairness_fairlearn"}
    assert modes["Privacy_privacymeter"] == ("lower", 0.0, 0.5)
    assert all(m == ("higher", 1.0, 0.0) for n, m in modes.items() if m[0] == "higher")
    assert fml_row("Unlearning_open_unlearning").label == "fml:Unlearning_open_unlearning: lower, best 0, worst baseline, -log10"


def test_each_shipped_task_has_its_fml_row_or_a_reason() -> None:
    expected = {
        "adversarial_robustness": "Robustness_and_Reliability_art", "causal_discovery": "Causality_gcastle",
        "causal_effect": "Causality_causalml", "causality": "Causality_causalml",
        "continual_learning": "Continual_Learning_continual_learning",
        "domain_generalization": "Generalization_domainbed", "fairness": None,  # 3.x: accuracy charged for its parity gap
        "federated_learning": "Federated_Learning_PFLlib", "ood_detection": None,  # since 2.0: FPR at 95% TPR
        "privacy": None, "representation_learning": "Representation_Learning_lightly",
        "semi_supervised": "Data_Efficiency_usb", "unlearning": None,
    }
    found = {}
    for manifest in sorted((REPO / "ml_tasks").glob("*/task.yaml")):
        spec = load_task(manifest.parent)
        m = spec.metric
        rng, why = resolve(MetricInfo(m.name, m.direction, m.floor, m.target, m.best_possible), spec.domain, "fml")
        found[spec.extends or spec.name] = rng.source.removeprefix("fml:") if rng else None  # a variant maps as its base
        assert rng is not None or why == UNMAPPED[(spec.domain, m.name)]
    assert found == expected


def test_fairness_under_both_ranges(tmp_path: Path) -> None:
    # our fairness task's metric and floor; the agent halves the baseline's parity difference on test
    run = load_run(write_run(tmp_path, "a", "fairness", 0, [
        Step("0000", "baseline", "ok", 0.044), Step("0001", "draft", "ok", 0.02, ["0000"])], direction="lower",
        floor=0.19051798687814908, target=0.015, best_possible=0.0, baseline_test=0.0892, best_test=0.0446,
        domain="fairness", metric="dpd_at_floor"))
    ours, theirs = tables.run_row(run, None, "manifest"), tables.run_row(run, None, "fml")
    assert theirs["fml_ni"] == pytest.approx(0.0892 - 0.0446)  # FML-bench: |0 - 1| = 1
    assert ours["fml_ni"] == pytest.approx((0.0892 - 0.0446) / 0.19051798687814908)
    assert ours["fml_ni"] / theirs["fml_ni"] == pytest.approx(5.249, abs=1e-3)  # the 5.25x
    assert theirs["fml_range"] == "fml:Fairness_fairlearn: lower, best 0, worst 1"
    assert ours["fml_range"] == "manifest: lower, best 0, worst 0.190518"
    # the process metrics follow the same range: val 0.044 -> 0.020 is 0.024 under FML-bench's (0, 1)
    assert theirs["auc_fml"] == pytest.approx(0.024) and ours["auc_fml"] == pytest.approx(0.024 / 0.19051798687814908)


def _with_infinite_step(run_dir: Path, placeholder: float, value: str) -> Path:
    """A journal whose step scored +-inf: the harness never writes one (its JSON refuses non-finite
    numbers), but a journal is untrusted input, and Python's JSON reader accepts `Infinity`."""
    journal = run_dir / "journal.jsonl"
    journal.write_text(journal.read_text().replace(repr(placeholder), value))
    return run_dir


def test_curve_relative_to_the_baseline_skips_infinite_steps(tmp_path: Path) -> None:
    # causalml's row (lower, 0, baseline): the curve is the relative reduction of the baseline's val 4.0
    run = load_run(_with_infinite_step(write_run(tmp_path, "a", "causality", 0, [
        Step("0000", "baseline", "ok", 4.0), Step("0001", "draft", "ok", 3.0, ["0000"]),
        Step("0002", "draft", "ok", -123.25, ["0000"]), Step("0003", "draft", "ok", 2.0, ["0000"])],
        domain="causal-inference", metric="pehe", floor=5.0, target=0.3, best_possible=0.0), -123.25, "-Infinity"))
    assert run.experiments[1].primary == -math.inf
    rng, _ = resolve(run.metric, run.domain, "fml")
    assert rng.source == "fml:Causality_causalml"
    assert process.improvement_curve(run, rng) == pytest.approx([0.25, 0.25, 0.5])  # -inf left best-so-far alone
    higher = load_run(_with_infinite_step(write_run(tmp_path, "b", "ssl", 0, [
        Step("0000", "baseline", "ok", 0.5), Step("0001", "draft", "ok", 0.6, ["0000"]),
        Step("0002", "draft", "ok", 123.25, ["0000"]), Step("0003", "draft", "ok", 0.7, ["0000"])],
        direction="higher", floor=0.1, target=0.95, best_possible=1.0), 123.25, "Infinity"))
    assert process.improvement_curve(higher, manifest_range(higher.metric)) == pytest.approx(
        [0.1 / 0.9, 0.1 / 0.9, 0.2 / 0.9])  # an infinite score is never a best


def test_zero_norm_threshold_is_fml_benchs() -> None:
    # a vector of norm 1e-9 is "zero" to FML-bench (norm <= 1e-8): its own cluster, not one with (1, 0)
    e = np.array([[1e-9, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert process.exploration(e, None)["uniqueness"] == pytest.approx(3 / 3)
    assert process.exploration(np.array([[1e-7, 0.0], [1.0, 0.0], [0.0, 1.0]]), None)["uniqueness"] == \
        pytest.approx(2 / 3)  # above the threshold it is a direction like any other
