"""The (p_best, p_worst) range each task's normalized improvement uses: ours, or FML-bench's.

`manifest` (the default): p_best = metric.best_possible (the target when absent), p_worst = the
floor, both from our task manifest. `fml`: FML-bench's own per-task table (`RANGE_META` of its
compute_agent_metrics.py), whose modes are a fixed (p_best, p_worst) or p_worst = the baseline
(a relative reduction `1 - a/b` when p_best is 0), with FML-bench's `-log10` display transform on its
unlearning task. Our tasks map to its rows by (domain, metric name) in OUR_ROWS, each checked for the
same direction; a task without a sensible row gets no range (NaN) and the reason in UNMAPPED.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from researchbench.benchmark.scoring.runs import MetricInfo

MODES = ("manifest", "fml")
BASELINE = "baseline"  # p_worst = the run's own baseline score


def neg_log10(value: float) -> float | None:
    """FML-bench's display transform of its unlearning metric (a KS p-value): None for values <= 0."""
    return -math.log10(value) if value > 0 else None


@dataclass(frozen=True)
class NIRange:
    """How to normalize one task's improvement: direction, p_best, p_worst (a number or BASELINE)."""

    direction: str
    best: float
    worst: float | str
    source: str  # "manifest" or "fml:<FML-bench task>"
    transform: Callable[[float], float | None] | None = None

    def shown(self, value: float | None) -> float | None:
        """A score on the range's scale (after its transform); None when there it is missing or not finite."""
        if value is None:
            return None
        value = self.transform(value) if self.transform is not None else value
        return value if value is not None and math.isfinite(value) else None

    def span(self, baseline: float) -> float:
        """|p_best - p_worst| for a run whose baseline is `baseline` (on the range's scale); 0 is degenerate."""
        return abs(self.best - (baseline if self.worst == BASELINE else self.worst))

    @property
    def label(self) -> str:
        worst = "baseline" if self.worst == BASELINE else f"{self.worst:g}"
        shown = f"{self.source}: {self.direction}, best {self.best:g}, worst {worst}"
        return shown + (", -log10" if self.transform else "")


# FML-bench's RANGE_META, row for row: (direction, p_best, p_worst); Unlearning in -log10 space.
FML_RANGE_META: dict[str, tuple[str, float, float | str]] = {
    "Generalization_domainbed": ("higher", 1.0, 0.0),
    "Generalization_domainbed_officehome": ("higher", 1.0, 0.0),
    "Data_Efficiency_easyfsl": ("higher", 1.0, 0.0),
    "Data_Efficiency_usb": ("higher", 1.0, 0.0),
    "Representation_Learning_lightly": ("higher", 1.0, 0.0),
    "Representation_Learning_solo_learn": ("higher", 1.0, 0.0),
    "Continual_Learning_continual_learning": ("higher", 1.0, 0.0),
    "Continual_Learning_pycil": ("higher", 1.0, 0.0),
    "Causality_causalml": ("lower", 0.0, BASELINE),
    "Causality_gcastle": ("lower", 0.0, BASELINE),
    "Robustness_and_Reliability_art": ("higher", 1.0, 0.0),
    "Robustness_openood": ("higher", 1.0, 0.0),
    "Privacy_privacymeter": ("lower", 0.0, 0.5),
    "Privacy_opacus": ("higher", 1.0, 0.0),
    "Fairness_and_Bias_aif360": ("lower", 0.0, 1.0),
    "Fairness_fairlearn": ("lower", 0.0, 1.0),
    "Unlearning_open_unlearning": ("lower", 0.0, BASELINE),
    "Federated_Learning_PFLlib": ("higher", 1.0, 0.0),
}
FML_TRANSFORMS = {"Unlearning_open_unlearning": neg_log10}

# Our tasks (summary domain, metric name) -> the FML-bench row measuring the same kind of quantity.
OUR_ROWS = {
    ("causal-inference", "pehe"): "Causality_causalml",  # ITE error of an effect estimator
    ("causal-discovery", "shd"): "Causality_gcastle",  # structural Hamming distance of a learned DAG
    ("continual-learning", "average_accuracy"): "Continual_Learning_continual_learning",
    ("data-efficiency", "accuracy"): "Data_Efficiency_usb",  # semi-supervised accuracy
    ("domain-generalization", "worst_env_accuracy"): "Generalization_domainbed",
    ("fairness", "dpd_at_floor"): "Fairness_fairlearn",  # demographic-parity difference, worst 1
    ("federated-learning", "accuracy"): "Federated_Learning_PFLlib",
    ("ood-detection", "auroc"): "Robustness_openood",
    ("representation-learning", "probe_accuracy"): "Representation_Learning_lightly",
    ("robustness", "robust_accuracy"): "Robustness_and_Reliability_art",
}
UNMAPPED = {
    ("unlearning", "unlearning_score"): "FML-bench's unlearning row scores -log10 of a KS p-value relative to "
                                        "the baseline; our unlearning_score (retain accuracy x (1 - attack gap), "
                                        "in [0, 1]) is no p-value, so neither that transform nor that range applies",
    ("fairness", "accuracy_at_parity"): "FML-bench's fairness rows score a parity difference (lower is better, "
                                        "worst 1); fairness 3.x scores the accuracy of decisions charged for "
                                        "their parity gap past a tolerance (2.x: zeroed past a limit), a "
                                        "quantity none of its rows measures",
    ("privacy", "tpr_at_10pct_fpr"): "FML-bench's privacy rows score a DP model's accuracy (opacus) or how "
                                     "close a defended model's attack AUROC is to 0.5 (privacymeter, lower is "
                                     "better); privacy 2.x scores the attack itself, its TPR at 10% FPR (higher "
                                     "is better), a quantity neither row measures",
    ("ood-detection", "fpr_at_95_tpr"): "FML-bench's OOD row scores AUROC (higher is better, worst 0); "
                                        "ood_detection (since 2.0) scores FPR at 95% TPR, a quantity none of its rows "
                                        "measures",
}


def fml_row(name: str) -> NIRange:
    direction, best, worst = FML_RANGE_META[name]
    return NIRange(direction, best, worst, f"fml:{name}", FML_TRANSFORMS.get(name))


def manifest_range(metric: MetricInfo) -> NIRange:
    best = metric.best_possible if metric.best_possible is not None else metric.target
    return NIRange(metric.direction, best, metric.floor, "manifest")


def resolve(metric: MetricInfo, domain: str, mode: str) -> tuple[NIRange | None, str]:
    """The range a run's NI uses under `mode`, or (None, why there is none)."""
    if mode == "manifest":
        return manifest_range(metric), ""
    key = (domain, metric.name)
    if key in UNMAPPED:
        return None, UNMAPPED[key]
    name = OUR_ROWS.get(key)
    if name is None:
        return None, f"no FML-bench range row for domain '{domain}', metric '{metric.name}' (see docs/metrics.md)"
    row = fml_row(name)
    if row.direction != metric.direction:
        return None, f"FML-bench's row {name} is {row.direction}-is-better, the metric {metric.name} is not"
    return row, ""
