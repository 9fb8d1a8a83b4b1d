"""Prompt size per step: how large each LLM prompt of a run was, per operator, and what it said.

    python benchmarks/prompt_sizes.py RUN_DIR               # sizes of every call, step by step
    python benchmarks/prompt_sizes.py RUN_DIR --show 0003   # also print node 0003's prompts in full
    python benchmarks/prompt_sizes.py --demo aide           # run an agent on causality with the
                                                            # scripted replies of the tests, then report

Sizes come from the `prompt_chars` each LLM call records, so any run can be inspected afterwards.
Prompts should stay flat as a run grows (harness files are shown in full once, then outlined; the
section budget `agent.prompt_chars` caps the rest). Needs `python setup.py --task causality` for --demo.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def report(run_dir: Path, show: str | None) -> None:
    from benchmark.records.journal import BlobStore

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


# settings under which the scripted replies of the end-to-end tests cover the run exactly
DEMO = {"aide": ["agent.num_drafts=2", "agent.debug_prob=1.0", "budget.steps=4"],
        "mcts": ["agent.num_children=2", "budget.steps=4"],
        "evolutionary": ["agent.individuals_per_generation=2", "budget.steps=5"],
        "greedy": ["budget.steps=2"]}


def demo(agent: str) -> Path:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from benchmark.cli import CONFIG_DIR
    from benchmark.plugins.manager import get_registry
    from benchmark.run.config import register_configs
    from benchmark.run.engine import run_benchmark

    register_configs(get_registry())
    results = Path(tempfile.mkdtemp(prefix="prompt-sizes-"))
    script = REPO / "examples" / "scripts" / "causality.yaml"
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[
            f"agent={agent}", "task=causality", f"results_dir={results}", "llm=scripted", f"llm.script={script}",
            "quiet=true", *DEMO.get(agent, [])])
    return Path(run_benchmark(cfg, get_registry(), echo=lambda line: None)["run_dir"])


def main() -> int:
    from benchmark.common.errors import UserError

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", nargs="?", type=Path)
    parser.add_argument("--show", help="print this node's prompts in full")
    parser.add_argument("--demo", metavar="AGENT", help="run AGENT on causality with scripted replies first")
    args = parser.parse_args()
    if (args.run_dir is None) == (args.demo is None):
        parser.error("give a RUN_DIR or --demo AGENT")
    try:
        report(demo(args.demo) if args.demo else args.run_dir, args.show)
    except UserError as exc:  # e.g. a stale workspace: one line naming the fix, not a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
