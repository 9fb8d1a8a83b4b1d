"""Shell commands an agent runs between experiments (a ReAct agent's `command` tool), run by the harness.

A command is not an experiment: it gets exactly the val phase's sandbox (the node's files laid over
the pristine baseline, the public data read-only, no labels, no test inputs, no network, the task's
limits, a clean environment) but no evaluator runs and no metric is read, so a command can never
spend or fake an experiment. Its time counts against the compute budget (CPU time where the step limit
is CPU time, benchmark/run/budget.py): the worker keeps one
`CommandRunner` per node, hands the operator `runner.run` as `ctx.run_command`, and records every
command on the node (`node.tool_calls`) itself, whatever the operator reports, so an agent cannot
hide the time it used. Output is untrusted text shown back to an LLM: it is capped at the source
(the executor keeps head and tail of each stream) and again in what `run` returns.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

from researchbench.benchmark.common.inert_text import job_output
from researchbench.benchmark.common.safefs import discard_tree
from researchbench.benchmark.contract.agent_api import CommandResult  # the agent contract's type; re-exported here
from researchbench.benchmark.executors.base import Executor
from researchbench.benchmark.records.journal import BlobStore
from researchbench.benchmark.run.experiment import materialize, phase_job
from researchbench.benchmark.tasks.workspace import PreparedTask

OUTPUT_CAP_BYTES = 256 * 1024  # per stream, what the executor keeps (head and tail)
RETURN_CHARS = 20000  # per stream, the tail handed back to the agent and stored on the node


class CommandRunner:
    """Runs one node's commands, one at a time, and keeps the record the engine charges."""

    def __init__(self, prepared: PreparedTask, executor: Executor, blobs: BlobStore, scratch: Path,
                 step_timeout_s: float, compute_left_s: float, seed: int = 0):
        self.prepared, self.executor, self.blobs, self.scratch = prepared, executor, blobs, scratch
        self.step_timeout_s, self.compute_left_s, self.seed = step_timeout_s, compute_left_s, seed
        self.records: list[dict[str, Any]] = []
        self.seconds = 0.0
        self._lock = threading.Lock()  # one command at a time per node (one scratch dir)

    def left_s(self) -> float:
        """Compute seconds this node may still spend on commands."""
        return max(self.compute_left_s - self.seconds, 0.0)

    def run(self, files: dict[str, str], command: str, timeout_s: float) -> CommandResult:
        """Run `command` with bash in the val sandbox over `files`; timeout capped by the step timeout
        and by the compute budget left."""
        with self._lock:
            limit = min(float(timeout_s), self.step_timeout_s, self.left_s())
            result = self._run(files, command, limit) if limit >= 1.0 else CommandResult(
                command, None, False, 0.0, "", "", refused="the compute budget is spent; no command may run")
            self.seconds = round(self.seconds + result.charged_seconds, 3)
            self.records.append(result.to_record(self.blobs))
            return result

    def _run(self, files: dict[str, str], command: str, timeout_s: float) -> CommandResult:
        discard_tree(self.scratch)
        (self.scratch / "output").mkdir(parents=True)
        started = time.monotonic()
        try:
            try:
                owned = materialize(self.prepared, files, self.scratch / "code")
            except ValueError as exc:
                return CommandResult(command, None, False, 0.0, "", "", refused=str(exc))
            job = phase_job(self.prepared, "val", self.scratch, timeout_s, owned, self.seed)
            job = dataclasses.replace(job, argv=("/bin/bash", "-c", command), output_cap_bytes=OUTPUT_CAP_BYTES)
            outcome = self.executor.submit(job).result()
            stdout, stderr = _read(job.stdout_path), _read(job.stderr_path)
            killed = outcome.violation or outcome.time_problem(timeout_s)
            if outcome.error or killed:
                stderr += f"\n[harness: {outcome.error or 'killed: ' + killed}]"
            return CommandResult(command, outcome.exit_code, outcome.timed_out,
                                 round(time.monotonic() - started, 3), stdout[-RETURN_CHARS:], stderr[-RETURN_CHARS:],
                                 cpu_seconds=outcome.cpu_seconds, clock=outcome.clock,
                                 peak_open_files=outcome.peak_open_files)
        finally:
            discard_tree(self.scratch)


def _read(path: Path) -> str:
    """A stream as the agent may see it: decoded, control sequences removed (benchmark/common/inert_text.py)."""
    try:
        return job_output(path.read_bytes())
    except FileNotFoundError:
        return ""
