"""The recorded strong-LLM AIDE run on causality (examples/recorded/causality-aide) replays offline.

The recording is a real run whose every prompt a strong LLM answered through a loopback relay; replaying
its first two steps from the cache alone (no endpoint is reachable: the relay is long gone) must make the
same code edits and score the same validation PEHE, or the shipped recording no longer reproduces it.
A shorter budget changes the prompts' budget line, so the replay follows the recording by position
(operator and call number), as measured run times would make it do anyway.

It runs the baseline, the two recorded drafts and the final test of the better one for real (about
two minutes of CPU, most of it the second draft's GLMs), so like the other causality runs it is `slow`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO, journal_records, run_inprocess

RECORDING = REPO / "examples" / "recorded" / "causality-aide"
STEPS = 2


def replayed_nodes(tmp_path: Path) -> tuple[list[dict], Path]:
    cache = tmp_path / "cache"
    shutil.copytree(RECORDING / "cache", cache)  # a replay never writes, but the shipped copy stays untouched
    summary, _ = run_inprocess(
        "agent=aide", "task=causality", "seed=0", f"budget.steps={STEPS}",
        "agent.num_drafts=2",  # the recorded run's budget of 10 made two drafts; a budget of 2 alone would make one
        "llm=openai_compatible", "llm.model=openai/relay", "llm.api_base=http://127.0.0.1:8771/v1",
        "llm.max_retries=0", "llm.cache=replay", f"llm.cache_dir={cache}", f"results_dir={tmp_path / 'results'}")
    assert summary["status"] == "finished"
    assert summary["llm"]["calls"] == summary["llm"]["cached_calls"] == 2 * STEPS + 1  # analyses + drafts, none live
    run_dir = Path(summary["run_dir"])
    return [r["node"] for r in journal_records(run_dir) if r["kind"] == "finished"], run_dir


@pytest.mark.slow
def test_recorded_aide_run_replays_its_first_steps_offline(causality, tmp_path: Path) -> None:
    from benchmark.records.journal import BlobStore

    recorded = json.loads((RECORDING / "nodes.json").read_text())[1:STEPS + 1]
    nodes, run_dir = replayed_nodes(tmp_path)
    replayed = nodes[1:]
    assert [n["id"] for n in replayed] == [r["id"] for r in recorded]
    blobs = BlobStore(run_dir / "blobs")
    for node, expected in zip(replayed, recorded):
        assert (node["operator"], node["status"]) == (expected["operator"], "ok")
        assert blobs.text(node["diff"]) == expected["diff"]  # the same edit, line for line
        assert node["files"] == expected["files"]
        assert node["primary"] == pytest.approx(expected["primary"], rel=1e-6)
