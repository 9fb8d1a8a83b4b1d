"""One node's work, off the main thread: the operator's proposal, the experiment, the agent's review.

An LLM call is often the longest part of a step, so with K experiments in flight the operator runs
here too, not only the sandbox. A worker touches only its own node, the blob store (safe from
threads) and the executor; the journal, the node store and the policy belong to the main thread
(benchmark/run/scheduler.py), which records results in the order they arrive. A broken agent plugin fails
its own step with its traceback on the node, never the run. An outage (benchmark/run/outage.py) is not a
step's outcome: it leaves the worker as InfrastructureFailure, even where agent code caught it, and
the node is never recorded.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from researchbench.benchmark.common.errors import BudgetExhausted, InfrastructureFailure
from researchbench.benchmark.contract.agent_api import Action, Agent, OpContext, Proposal
from researchbench.benchmark.edits import unified_diff
from researchbench.benchmark.records.journal import AGENT_FAILED, BUGGY, EDIT_FAILED, NO_OP, OK, BlobStore, Node
from researchbench.benchmark.run import display as show
from researchbench.benchmark.run.commands import CommandRunner
from researchbench.benchmark.run.display import Display
from researchbench.benchmark.run.experiment import run_phase
from researchbench.benchmark.run.outage import GuardedExecutor
from researchbench.benchmark.tasks.manifest import Budget
from researchbench.benchmark.tasks.workspace import PreparedTask

log = logging.getLogger(__name__)
TEXT_LIMIT = 4000  # characters of plan, feedback and analysis kept on a node


@dataclass
class StepResult:
    node: Node
    abandoned: str = ""  # why the LLM stopped (a cap, the script ran out) before a proposal: the node is dropped
    stop: str = ""  # launch nothing more (the LLM budget ran out in the review); the node still counts


def crash_report(exc: BaseException, frames: int = 6) -> str:
    """The exception on the first line (what progress lines show), then its innermost frames."""
    stack = traceback.extract_tb(exc.__traceback__)[-frames:]
    return f"{type(exc).__name__}: {exc}\nTraceback (innermost last):\n{''.join(traceback.format_list(stack))}"


def label(node: Node) -> str:
    """'improve <- 0003': what a running job is, for the live view."""
    return f"{node.operator} <- {','.join(node.parents) or '-'}"


class StepRunner:
    """Runs nodes: the whole step of a search node, or just the experiment (the baseline)."""

    def __init__(self, prepared: PreparedTask, executor: GuardedExecutor, blobs: BlobStore, budget: Budget,
                 scratch_root: Path, display: Display, seed: int = 0):
        self.prepared, self.executor, self.blobs = prepared, executor, blobs
        self.budget, self.scratch_root, self.display = budget, scratch_root, display
        self.seed = seed  # fills the phases' {seed}

    def step(self, agent: Agent, node: Node, action: Action, ctx: OpContext) -> StepResult:
        """Propose, run the experiment when the proposal changed something, then let the agent review it."""
        self.display.job(node.id, label(node), show.PROPOSING if ctx.llm is not None else show.PROPOSING_NO_LLM)
        commands = CommandRunner(self.prepared, self.executor, self.blobs, self.scratch_root / f"{node.id}-cmd",
                                 self.budget.step_timeout_s, ctx.compute_left_s, self.seed)
        ctx = dataclasses.replace(ctx, run_command=commands.run)
        try:
            proposal, agent_failed = self._propose(agent, ctx, action)
        except BudgetExhausted as exc:
            return StepResult(node, abandoned=exc.stop_reason())
        finally:  # recorded by the harness, not the operator, so every command's time is charged
            node.tool_calls = commands.records
        self.raise_if_outage(ctx)
        if proposal.transcript:
            node.transcript = self.blobs.put(json.dumps(proposal.transcript, sort_keys=True, ensure_ascii=False))
        node.plan = proposal.plan[:TEXT_LIMIT]
        node.feedback = proposal.feedback[:TEXT_LIMIT]
        node.memo = dict(proposal.memo)
        node.llm_calls = [self.store_call(call) for call in proposal.llm_calls]
        failed_call = next((c for c in reversed(proposal.llm_calls) if c.error), None)
        if not proposal.edit_ok:
            node.status = AGENT_FAILED if agent_failed or failed_call else EDIT_FAILED
            if failed_call and not node.feedback:
                node.feedback = f"LLM call failed: {failed_call.error}"
        elif not proposal.changed:
            node.status = NO_OP
        else:
            parent_files = ctx.store.files(ctx.store.get(node.parents[0])) if node.parents else {}
            self.execute(node, proposal.files, parent_files)
        stop = self.analyze(agent, ctx, node) if node.executed and agent.analyze is not None else ""
        return StepResult(node, stop=stop)

    def _propose(self, agent: Agent, ctx: OpContext, action: Action) -> tuple[Proposal, bool]:
        """The operator's proposal, and whether the agent itself failed (no files in that case)."""
        operator = agent.operators.get(action.operator)
        if operator is None:
            return Proposal(files={}, edit_ok=False, feedback=f"agent has no operator '{action.operator}'"), True
        unknown = [p for p in action.parents if p not in ctx.store]
        if unknown:
            return Proposal(files={}, edit_ok=False,
                            feedback=f"the policy chose parents that are not finished nodes: {unknown}"), True
        parents = [ctx.store.get(p) for p in action.parents]
        try:
            return operator(ctx, parents, action), False
        except (BudgetExhausted, InfrastructureFailure):
            raise
        except Exception as exc:  # a broken agent plugin fails its step, not the run
            log.error("operator '%s' crashed", action.operator, exc_info=exc)
            return Proposal(files={}, edit_ok=False, feedback=f"operator crashed: {crash_report(exc)}"), True

    def analyze(self, agent: Agent, ctx: OpContext, node: Node) -> str:
        """The agent's review of an executed node; returns a reason to stop launching, or ""."""
        self.display.job(node.id, label(node), show.ANALYZING)
        try:
            analysis = agent.analyze(ctx, node)
            text = analysis.text[:TEXT_LIMIT]
            calls = list(analysis.llm_calls)
        except BudgetExhausted as exc:
            node.analysis_error = exc.stop_reason()
            return node.analysis_error
        except InfrastructureFailure:
            raise
        except Exception as exc:  # the review is advice: its failure costs nothing but the review
            log.error("analyzer crashed on node %s", node.id, exc_info=exc)
            node.analysis_error = f"analyzer crashed: {crash_report(exc)}"[:TEXT_LIMIT]
            return ""
        self.raise_if_outage(ctx)
        node.analysis = text
        node.llm_calls += [self.store_call(call, purpose="analysis") for call in calls]
        failed_call = next((c for c in reversed(calls) if c.error), None)
        if failed_call and not text:
            node.analysis_error = f"LLM call failed: {failed_call.error}"
        return ""

    def raise_if_outage(self, ctx: OpContext) -> None:
        """Stop the step if the LLM endpoint or the executor failed meanwhile, whatever the agent's code did."""
        if ctx.llm is not None:
            ctx.llm.raise_if_unavailable()
        if self.executor.failure is not None:
            raise self.executor.failure.renewed()

    def execute(self, node: Node, files: dict[str, str], parent_files: dict[str, str]) -> None:
        """Run the val phase of `files` in the sandbox and record the outcome on the node."""
        self.display.job(node.id, label(node), show.RUNNING)
        node.files = {rel: self.blobs.put(text) for rel, text in sorted(files.items())}
        if parent_files:
            node.diff = self.blobs.put(unified_diff(parent_files, files))
        scratch = self.scratch_root / node.id
        outcome = run_phase(self.prepared, files, "val", self.executor, scratch, self.budget.step_timeout_s,
                            self.seed)
        node.executed = True
        node.exit_code, node.timed_out, node.seconds = outcome.exit_code, outcome.timed_out, outcome.seconds
        node.cpu_seconds, node.clock, node.peak_open_files = outcome.cpu_seconds, outcome.clock, outcome.peak_open_files
        node.wall_limit_s, node.time_limit = outcome.wall_limit_s, outcome.time_limit
        node.stdout, node.stderr = self.blobs.put(outcome.stdout), self.blobs.put(outcome.stderr)
        node.metrics, node.primary, node.bug_reason = outcome.metrics, outcome.primary, outcome.bug_reason
        if outcome.note:
            node.feedback = "\n".join(filter(None, (node.feedback, outcome.note)))[:TEXT_LIMIT]
        node.status = OK if outcome.ok else BUGGY

    def store_call(self, call: Any, purpose: str = "") -> dict[str, Any]:
        """An LLM call as a journal record, its prompt and reply moved to the blob store."""
        record = call.to_dict()
        record["messages"] = self.blobs.put(json.dumps(record.get("messages", []), sort_keys=True, ensure_ascii=False))
        record["response"] = self.blobs.put(record.get("response") or "")
        if purpose:
            record["purpose"] = purpose
        return record
