"""The causality task's evaluator: `python evaluate.py --phase val|test --predictions-dir <dir> --labels <dir>
--metrics <out.json>`. Reading predictions.csv (rep, unit, ite), its checks and the metrics (pehe, primary and
lower-is-better; ite_mae; ate_abs_error) are the read-only `task_runtime.effects`, shared with causal_effect."""

from __future__ import annotations

import sys

from task_runtime import evaluator_main
from task_runtime.effects import evaluate_effects as evaluate


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Score ITE predictions (PEHE) for the causality task.", argv)


if __name__ == "__main__":
    sys.exit(main())
