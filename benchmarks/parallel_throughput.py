"""Experiments per second with K in flight, against one at a time.

    python benchmarks/parallel_throughput.py --seconds 5

A non-LLM agent runs the sleepy fixture task (tests/fixtures/tasks/sleepy): every experiment waits
`--seconds` in its sandbox (an LLM call or a GPU job waits the same way, the machine idle). Throughput
is experiments over the search phase's wall time (baseline finished -> last node finished, from the
journal), at parallel=1 (a steady rate, so fewer experiments suffice) and parallel=8:
throughput_ratio = K=8 / K=1, target >= 7.2. Each experiment also costs some CPU (sandbox, interpreter
and evaluator start-up), which eight jobs at once share, so a short wait on a small machine lowers
the ratio; mean_experiment_s shows it. A CPU-bound variant (each experiment burns `--cpu-seconds` of
CPU) at parallel=2 shows what the cores allow: cpu_bound_ratio_k2 <= 2, less on a shared machine.
The last line is machine-read.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


@dataclasses.dataclass
class PacedConfig:
    name: str = "paced"
    seconds: float = 1.0  # how long each experiment works
    work: str = "sleep"  # "sleep" (waits) or "spin" (burns CPU)


def _agent_spec():
    from researchbench.benchmark.contract.agent_api import Action, Agent, AgentSpec, Proposal, StatelessPolicy

    class FromBaseline(StatelessPolicy):
        def next_action(self, store, rng):
            return Action("pace", ("0000",))

    def build(cfg: PacedConfig, task) -> Agent:
        def pace(ctx, parents, action) -> Proposal:
            files = ctx.store.files(parents[0])
            params = {**json.loads(files["params.json"]), "seconds": cfg.seconds, "work": cfg.work,
                      "slope": round(ctx.rng.uniform(0, 4), 9)}  # new files every step: always an experiment
            return Proposal(files={**files, "params.json": json.dumps(params)}, plan=f"slope {params['slope']}")

        return Agent(FromBaseline(), {"pace": pace})

    return AgentSpec(name="paced", config_class=PacedConfig, build=build, uses_llm=False,
                     description="benchmark only: experiments that take a set time")


def measure(results: Path, experiments: int, parallel: int, seconds: float, work: str) -> dict:
    """One run; returns experiments/s over the search phase and what it took."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.run.config import register_configs
    from researchbench.benchmark.run.engine import run_benchmark
    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.workspace import prepare

    base = get_registry()
    registry = dataclasses.replace(base, agents={**base.agents, "paced": _agent_spec()})
    register_configs(registry)
    prepare(load_task(registry.tasks["sleepy"]), log=lambda *a: None)
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(REPO / "configs"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[
            "agent=paced", "task=sleepy", f"agent.seconds={seconds}", f"agent.work={work}",
            f"budget.steps={experiments}", f"parallel={parallel}", f"results_dir={results}", "quiet=true",
            f"budget.step_timeout_s={max(30.0, 10 * seconds)}"])
    summary = run_benchmark(cfg, registry, echo=lambda line: None)
    records = [json.loads(line) for line in (Path(summary["run_dir"]) / "journal.jsonl").read_text().splitlines()]
    nodes = [r["node"] for r in records if r["kind"] == "finished"]
    assert summary["steps"]["experiments"] == experiments and all(n["status"] == "ok" for n in nodes), summary
    wall = max(n["finished_at"] for n in nodes[1:]) - nodes[0]["finished_at"]
    mean_s = sum(n["seconds"] for n in nodes[1:]) / experiments  # one experiment: sandbox + evaluator
    return {"parallel": parallel, "work": work, "experiments": experiments, "wall_s": round(wall, 2),
            "per_s": experiments / wall, "mean_experiment_s": round(mean_s, 2), "sandbox": summary["sandbox"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiments", type=int, default=32, help="at parallel=8 (default 32)")
    parser.add_argument("--k1-experiments", type=int, default=8, help="at parallel=1 (default 8)")
    parser.add_argument("--seconds", type=float, default=5.0, help="each experiment's wait (default 5)")
    parser.add_argument("--cpu-experiments", type=int, default=8, help="per CPU-bound run (default 8)")
    parser.add_argument("--cpu-seconds", type=float, default=1.0, help="CPU each one burns (default 1)")
    args = parser.parse_args()
    if min(args.experiments, args.k1_experiments) < 8 or args.cpu_experiments < 2 or \
            min(args.seconds, args.cpu_seconds) <= 0:
        parser.error("need --experiments and --k1-experiments >= 8, --cpu-experiments >= 2, positive seconds")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ["RESEARCHBENCH_TASKS_PATH"] = str(REPO / "tests" / "fixtures" / "tasks")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RESEARCHBENCH_WORKSPACE"] = str(Path(tmp) / "workspace")
        runs = {}
        plan = {"sleep1": (args.k1_experiments, 1, args.seconds, "sleep"),
                "sleep8": (args.experiments, 8, args.seconds, "sleep"),
                "cpu1": (args.cpu_experiments, 1, args.cpu_seconds, "spin"),
                "cpu2": (args.cpu_experiments, 2, args.cpu_seconds, "spin")}
        for key, (n, k, seconds, work) in plan.items():
            runs[key] = measure(Path(tmp) / key, n, k, seconds, work)
            r = runs[key]
            print(f"parallel={r['parallel']} work={r['work']} experiments={r['experiments']} wall={r['wall_s']}s "
                  f"experiments_per_s={r['per_s']:.3f} mean_experiment_s={r['mean_experiment_s']} "
                  f"sandbox={r['sandbox']}", flush=True)
    print(f"cpu_count={os.cpu_count()} seconds={args.seconds} cpu_seconds={args.cpu_seconds}")
    print(f"cpu_bound_ratio_k2={runs['cpu2']['per_s'] / runs['cpu1']['per_s']:.2f}")
    print(f"throughput_ratio={runs['sleep8']['per_s'] / runs['sleep1']['per_s']:.2f}")


if __name__ == "__main__":
    main()
