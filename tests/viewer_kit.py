"""What the viewer tests share: a results folder with finished, hostile and live runs, and the viewer served
the way a user starts it (`python -m researchbench view RESULTS --port 0 --no-browser`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

from researchbench.benchmark.records.journal import BlobStore, Journal, Node, write_json_atomic
from researchbench.benchmark.records.kinds import Checkpoint, Finished, Pending
from conftest import HANG_TIMEOUT_S, REPO
from scoring_runs import Step, write_run
from scoring_runs import golden_steps

XSS = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
CONTROL = "\x1b[2J\x1b]0;owned\x07\x00\x9b31m"  # clear screen, set title, NUL, a C1 CSI
HOSTILE_PLAN = f"plan </pre>{XSS}{CONTROL} end"


def finished_runs(root: Path) -> list[Path]:
    """Two finished runs of one task (aide and greedy), with blobs, for the list, a run page and compare."""
    return [write_run(root, "aide", "toy", 0, golden_steps(), baseline_test=12.0, best_test=5.0, budget_steps=6),
            write_run(root, "greedy", "toy", 0, golden_steps()[:4], baseline_test=12.0, best_test=8.0, budget_steps=6)]


def live_run(root: Path, steps: int = 3) -> Path:
    """A run still going: the first `steps` golden nodes (one with a hostile plan), no final record,
    summary `running`; the caller claims it (benchmark.records.owner) so it reads as alive."""
    golden = golden_steps()[:steps]
    golden[1].plan = HOSTILE_PLAN
    golden[1].stdout = f"epoch 1 {XSS}{CONTROL}"
    return write_run(root, "react", "toy", 1, golden, status="running", budget_steps=6)


def append_node(run_dir: Path, node_id: str, parent: str, primary: float, plan: str = "a new idea",
                pending_only: bool = False) -> None:
    """What the engine appends when a node starts (pending) and finishes: the real journal writer and blob store."""
    journal, blobs = Journal(run_dir / "journal.jsonl"), BlobStore(run_dir / "blobs")
    step = int(node_id)
    if not pending_only:
        node = Node(id=node_id, step=step, operator="improve", parents=[parent], plan=plan, status="ok",
                    files={"model.py": blobs.put(f"a = {primary}\n")}, diff=blobs.put(f"-a = 4\n+a = {primary}\n"),
                    executed=True, exit_code=0, seconds=1.5, stdout=blobs.put("ok\n"), stderr=blobs.put(""),
                    metrics={"score": primary}, primary=primary)
        journal.append(Finished(node, Checkpoint(policy=None, counters={}, usage={})))
        summary = json.loads((run_dir / "summary.json").read_text())
        summary["steps"]["nodes"] += 1
        if summary["best"]["val"] is None or primary < summary["best"]["val"]:  # lower is better (golden_steps)
            summary["best"].update(node=node_id, val=primary)  # as the engine's summary after each node
        write_json_atomic(run_dir / "summary.json", summary)
    else:
        journal.append(Pending(id=node_id, step=step, operator="improve", at=0.0, parents=[parent]))


@contextlib.contextmanager
def served(results: Path, *args: str) -> Iterator[str]:
    """The viewer as a user starts it, on a free port; yields its address. Stopped with Ctrl-C (SIGINT),
    after which it must exit 0."""
    proc = subprocess.Popen([sys.executable, "-m", "researchbench.benchmark.viewer", str(results), "--port", "0", "--no-browser",
                             *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "serving" in first, (first, proc.stderr.read() if proc.poll() is not None else "")
        yield first.split(" at ", 1)[1].split()[0]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=HANG_TIMEOUT_S / 20)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0, proc.stderr.read() if proc.stderr else code


def wait_until(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


__all__ = ["CONTROL", "HOSTILE_PLAN", "Step", "XSS", "append_node", "finished_runs", "live_run", "served", "wait_until"]
