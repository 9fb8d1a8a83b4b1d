"""Harness-owned driver for the causal_effect task: runs model.py once per replication, writes predictions.

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

The harness restores this file before every run, so edits to it are discarded. It reads only the
public training data, the inputs to predict and params.json; it never sees labels, and it writes only
`<out>/predictions.csv` (rep, unit, ite). Scores are computed from that file by the task's evaluator
in a separate process; nothing printed here is ever parsed as a metric. Before each replication the
global RNGs are seeded with the run's seed plus the replication, which model code also gets as
params["seed"] for its own generators.
The loop over replications and the checks of what `estimate_ite` returns live in the harness's
read-only `task_runtime.effects`, shared with the other treatment-effect task.
"""

from __future__ import annotations

import sys
from pathlib import Path

from task_runtime import DriverArgs, driver_main, read_params
from task_runtime.effects import run_replications

HERE = Path(__file__).resolve().parent


def run(args: DriverArgs) -> None:
    sys.path.insert(0, str(HERE))
    import model  # the agent-editable module, next to this driver

    run_replications(args, model, read_params(HERE / "params.json"), args.seed, seed_per_replication=True)


def main(argv: list[str] | None = None) -> int:
    return driver_main(run, "Run model.py on the causal_effect task's data.", inputs="{phase}_inputs.csv",
                       seed_help="seeds the global RNGs before each replication", argv=argv)


if __name__ == "__main__":
    sys.exit(main())
