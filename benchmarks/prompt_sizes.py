"""Prompt size per step: how large each LLM prompt of a run was, per operator, and what it said.

    python benchmarks/prompt_sizes.py RUN_DIR               # sizes of every call, step by step
    python benchmarks/prompt_sizes.py RUN_DIR --show 0003   # also print node 0003's prompts in full
    python benchmarks/prompt_sizes.py --demo aide           # run an agent on causality with the
                                                            # scripted replies of the tests, then report
    python benchmarks/prompt_sizes.py --demo react --tour   # ... and print the first prompt of each operator

Sizes come from the `prompt_chars` each LLM call records, so any run can be inspected afterwards.
Prompts should stay flat as a run grows (harness files are shown in full once, then outlined; the
section budget `agent.prompt_chars` caps the rest). Needs `python setup.py --task causality` for --demo;
--demo runs every built-in LLM agent (a minute or two each on causality).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def tour(run_dir: Path) -> None:
    """The first prompt of each operator (draft, improve, analyze, ideation, ...), whole, as the LLM read it."""
    from researchbench.benchmark.records.journal import BlobStore

    blobs = BlobStore(run_dir / "blobs")
    seen: set[str] = set()
    for line in (run_dir / "journal.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["kind"] != "finished":
            continue
        for call in record["node"]["llm_calls"]:
            if call.get("operator", "") in seen or not call.get("messages"):
                continue
            seen.add(call.get("operator", ""))
            print(f"\n===== {call.get('operator', '')} (node {record['node']['id']}) =====")
            for message in json.loads(blobs.text(call["messages"])):
                print(f"----- {message['role']} ({len(message['content'])} chars) -----\n{message['content']}")


def report(run_dir: Path, show: str | None) -> None:
    from researchbench.benchmark.records.journal import BlobStore

    blobs = BlobStore(run_dir / "blobs")
    records = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    print(f"{'node':<6} {'operator':<10} {'call':<9} {'prompt chars':>12} {'prompt tok':>10} {'reply tok':>9}")
    for node in (r["node"] for r in records if r["kind"] == "finished"):
        for call in node["llm_calls"]:
            print(f"{node['id']:<6} {node['operator']:<10} {call.get('operator', ''):<9} "
                  f"{call.get('prompt_chars', 0):>12} {call['prompt_tokens']:>10} {call['completion_tokens']:>9}")
            if show == node["id"]:
                for message in json.loads(blobs.text(call["messages"])):
                    print(f"----- {message['role']} ({len(message['content'])} chars) -----\n{message['content']}")


# settings under which the scripted replies of the end-to-end tests cover the run exactly, and their script
DEMO = {"aide": (["agent.num_drafts=2", "agent.debug_prob=1.0", "budget.steps=4"], "causality.yaml"),
        "mcts": (["agent.num_children=2", "budget.steps=4"], "causality.yaml"),
        "evolutionary": (["agent.individuals_per_generation=2", "budget.steps=5"], "causality.yaml"),
        "greedy": (["budget.steps=2"], "causality.yaml"),
        "autoresearch": (["budget.steps=4"], "causality_hillclimb.yaml"),
        "adaptivesearch": (["budget.steps=5", "agent.branch_skip_max=1"], "causality_hillclimb.yaml"),
        "ai_scientist_v1": (["budget.steps=4", "agent.num_ideas=2", "agent.num_reflections=2", "agent.max_runs=2"],
                            "ai_scientist_v1.yaml"),
        "ai_scientist_v2": (["budget.steps=4", "agent.num_ideas=1", "agent.num_reflections=1",
                             "agent.stage_budgets=[0.25,0.25,0.25,0.25]"], "ai_scientist_v2.yaml"),
        "openevolve": (["budget.steps=3"], "causality_openevolve.yaml"),
        "react": (["budget.steps=2"], "causality_react.yaml")}


def demo(agent: str) -> Path:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from researchbench.benchmark.cli import CONFIG_DIR
    from researchbench.benchmark.common.errors import UserError
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.run.config import register_configs
    from researchbench.benchmark.run.engine import run_benchmark

    register_configs(get_registry())
    if agent not in DEMO:
        raise UserError(f"--demo knows the agents {', '.join(DEMO)}; got '{agent}'")
    overrides, script_name = DEMO[agent]
    results = Path(tempfile.mkdtemp(prefix="prompt-sizes-"))
    shipped = REPO / "examples" / "scripts" / script_name  # the shipped scripts first, then the tests' own
    script = shipped if shipped.exists() else REPO / "tests" / "fixtures" / "scripts" / script_name
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[
            f"agent={agent}", "task=causality", f"results_dir={results}", "llm=scripted", f"llm.script={script}",
            "quiet=true", *overrides])
    return Path(run_benchmark(cfg, get_registry(), echo=lambda line: None)["run_dir"])


def main() -> int:
    from researchbench.benchmark.common.errors import UserError

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", nargs="?", type=Path)
    parser.add_argument("--show", help="print this node's prompts in full")
    parser.add_argument("--demo", metavar="AGENT", help=f"run AGENT on causality with scripted replies first "
                                                        f"({', '.join(DEMO)})")
    parser.add_argument("--tour", action="store_true", help="print the first prompt of each operator in full")
    args = parser.parse_args()
    if (args.run_dir is None) == (args.demo is None):
        parser.error("give a RUN_DIR or --demo AGENT")
    try:
        run_dir = demo(args.demo) if args.demo else args.run_dir
        report(run_dir, args.show)
        if args.tour:
            tour(run_dir)
    except UserError as exc:  # e.g. a stale workspace: one line naming the fix, not a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
