"""Harness overhead per step: greedy agent, mocked LLM, a task whose experiment does nothing.

    python benchmarks/harness_overhead.py --steps 500

overhead of a step = its wall time (finished record to finished record) minus the experiment's time
(sandbox run + evaluator) minus LLM latency: what the harness itself costs (policy, prompt, edit,
journal, blobs, summary). flatness = median overhead of the last 100 steps / median of steps 10-110,
so a harness whose per-step cost grows with the run shows up as flatness > 1.
Targets: median_overhead_ms <= 25 and flatness <= 1.25 at 500 steps. The last line is machine-read.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# Two whole-file replies that differ, so every step changes the code and runs an experiment.
REPLIES = [
    f"Plan: variant {tag}.\n\n### FILE: model.py\n```python\n# variant {tag}\ndef predict(x, params):\n"
    f"    return params[\"slope\"] * x\n```\n"
    for tag in ("a", "b")
]


def measure(steps: int, results: Path) -> tuple[list[float], dict]:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.run.config import register_configs
    from researchbench.benchmark.run.engine import run_benchmark
    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.workspace import prepare

    registry = get_registry()
    register_configs(registry)
    prepare(load_task(registry.tasks["toy"]), log=lambda *a: None)
    with initialize_config_dir(config_dir=str(REPO / "configs"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[
            "agent=greedy", "task=toy", "llm=mock", f"budget.steps={steps}", f"results_dir={results}", "quiet=true"])
    OmegaConf.update(cfg, "llm.mock_responses", REPLIES, merge=False)
    summary = run_benchmark(cfg, registry, echo=lambda line: None)
    records = [json.loads(line) for line in (Path(summary["run_dir"]) / "journal.jsonl").read_text().splitlines()]
    nodes = [r["node"] for r in records if r["kind"] == "finished"]
    overheads = []
    for previous, node in zip(nodes[1:], nodes[2:]):  # search steps only; the baseline has no predecessor
        wall = node["finished_at"] - previous["finished_at"]
        llm = sum(call.get("latency_s") or 0.0 for call in node["llm_calls"])
        overheads.append((wall - node["seconds"] - llm) * 1000)
    return overheads, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=500)
    args = parser.parse_args()
    if args.steps < 120:
        parser.error("--steps must be at least 120 (flatness compares steps 10-110 with the last 100)")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ["RESEARCHBENCH_TASKS_PATH"] = str(REPO / "tests" / "fixtures" / "tasks")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RESEARCHBENCH_WORKSPACE"] = str(Path(tmp) / "workspace")
        started = time.monotonic()
        overheads, summary = measure(args.steps, Path(tmp) / "results")
        elapsed = time.monotonic() - started
    executed = summary["steps"]["experiments"]
    median = statistics.median(overheads)
    flatness = statistics.median(overheads[-100:]) / statistics.median(overheads[9:109])
    print(f"steps={len(overheads)} experiments={executed} wall={elapsed:.1f}s sandbox={summary['sandbox']}")
    print(f"overhead_ms p50={median:.2f} p90={statistics.quantiles(overheads, n=10)[-1]:.2f} "
          f"max={max(overheads):.2f}")
    print(f"median_overhead_ms={median:.2f} flatness={flatness:.3f}")


if __name__ == "__main__":
    main()
