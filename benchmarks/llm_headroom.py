"""Headroom against a strong LLM: how much of each task's baseline->1.0 gap recorded LLM-agent runs closed.

    python benchmarks/llm_headroom.py RESULTS [RESULTS ...]

Reads every finished run under the given folders (summary.json: agent, task, version, baseline and best
hidden-test scores) and scores it against the task's CURRENT manifest (floor and target), so runs made
before a target moved are measured on today's scale, with the version they ran on shown. The gap closed is
the one benchmarks/headroom.py uses for Optuna: (ach(best) - ach(baseline)) / (1 - ach(baseline)), with
achievement clip((s - floor) / (target - floor), 0, 1). The rule (docs/tasks.md, Headroom): a strong LLM
agent (greedy, default budget) closes at most 0.7. Exit 1 when a greedy run at the default budget closes more.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from headroom import achievement  # noqa: E402  (the same scale as the Optuna measurement)

MAX_LLM_GAP_CLOSED = 0.7


def rows(folders: list[Path]) -> list[dict]:
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.records.summary import SUMMARY_FILE, read_summary
    from researchbench.benchmark.tasks.manifest import load_task

    tasks = get_registry().tasks
    found = []
    for folder in folders:
        for path in sorted(folder.rglob(SUMMARY_FILE)):
            summary = read_summary(path.parent)
            if summary.status != "finished" or summary.task not in tasks:
                continue
            spec = load_task(tasks[summary.task])
            base, best = summary.baseline.test, summary.best.test
            a0 = achievement(base, spec.metric.floor, spec.metric.target)
            a1 = achievement(best, spec.metric.floor, spec.metric.target)
            gap = (a1 - a0) / (1 - a0) if a0 is not None and a1 is not None and a0 < 1 else float("nan")
            found.append({"task": spec.name, "ran_on": summary.task_version, "now": spec.version,
                          "agent": summary.agent, "steps": summary.budget.limits.experiments,
                          "default_steps": spec.budget.steps, "baseline": base, "best": best,
                          "target": spec.metric.target, "achievement": a1, "gap_closed": gap})
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+")
    args = parser.parse_args(argv)
    table = rows(args.results)
    print("| task (ran on -> now) | agent | experiments | baseline test | best test | 1.0 (target) | achievement | "
          "gap closed |\n|---|---|---|---|---|---|---|---|")
    ok = True
    for r in sorted(table, key=lambda r: (r["task"], r["agent"])):
        over = r["agent"] == "greedy" and r["steps"] == r["default_steps"] and r["gap_closed"] > MAX_LLM_GAP_CLOSED
        ok &= not over
        print(f"| {r['task']} ({r['ran_on']} -> {r['now']}) | {r['agent']} | {r['steps']} | {r['baseline']:.4g} | "
              f"{r['best']:.4g} | {r['target']:.4g} | {r['achievement']:.2f} | {r['gap_closed']:.2f}"
              f"{' (over ' + str(MAX_LLM_GAP_CLOSED) + ')' if over else ''} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
