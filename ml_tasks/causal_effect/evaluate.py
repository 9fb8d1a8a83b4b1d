"""Score ITE predictions for the causal_effect task against the hidden true effects.

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

Runs in its own process on the harness side; agent code never imports it. The score comes only from
`<predictions-dir>/predictions.csv` (rep, unit, ite); invalid predictions print one line to stderr and
exit 1 without writing metrics. Metrics: pehe (primary, lower is better), ite_mae and ate_abs_error,
each per replication and then averaged; reading, checks and formulas are the harness's read-only
`task_runtime.effects`, shared by both treatment-effect tasks.
"""

from __future__ import annotations

import sys

from task_runtime import evaluator_main
from task_runtime.effects import evaluate_effects as evaluate


def main(argv: list[str] | None = None) -> int:
    return evaluator_main(evaluate, "Score ITE predictions (PEHE) for the causal_effect task.", argv)


if __name__ == "__main__":
    sys.exit(main())
