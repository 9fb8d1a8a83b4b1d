"""Score runs: `python compute_agent_metrics.py results/optuna` (or results/, or one run dir).

Prints and writes the raw table (baseline vs agent on val and hidden test) and the normalized
scores for whatever tasks are present. Output: metric_reports/<input name>/ unless --out is given.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmark.errors import UserError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a results directory (any level: all, one agent, one run)")
    parser.add_argument("--out", type=Path, help="where to write the tables (default metric_reports/<name>)")
    args = parser.parse_args(argv)
    from benchmark import metrics

    try:
        out = args.out or Path("metric_reports") / args.results.resolve().name
        if out.resolve().is_relative_to(args.results.resolve()):
            raise UserError(f"--out {out} is inside the results being scored; choose another directory")
        runs = metrics.load_runs(args.results)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    raw, normalized = metrics.raw_table(runs), metrics.normalized_table(runs)
    out.mkdir(parents=True, exist_ok=True)
    runs.to_csv(out / "runs.csv", index=False)
    raw.to_csv(out / "raw.csv", index=False)
    normalized.to_csv(out / "normalized.csv")
    with_pd_options = {"display.width": 200, "display.max_columns": 30, "display.float_format": "{:.4f}".format}
    import pandas as pd

    with pd.option_context(*[x for kv in with_pd_options.items() for x in kv]):
        print(f"Raw scores ({len(runs)} runs; test = hidden test set, mean over runs)")
        print(raw.to_string(index=False))
        print("\nNormalized hidden-test score: 0 = trivial predictor (floor), 1 = task target, < 0 = regression")
        print(normalized.to_string())
    print(f"\nwrote {out}/runs.csv, raw.csv, normalized.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
