"""The run loop: policy picks an action, an operator proposes files, the sandbox runs them, one node.

Every node is journaled (write-ahead, then finished + checkpoint), so a killed run resumes where it
stopped: finished nodes are never repeated, at most the one in-flight experiment is re-run, and the
per-step RNG is derived from (seed, step) so the resumed run makes the same choices. After the
search, the best-validation node (and the baseline) run once on the hidden test set.
"""

from __future__ import annotations

import json
import random
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf

from benchmark import summary as report
from benchmark.agent_api import Action, Agent, OpContext, Proposal
from benchmark.config import config_hash, default_run_id, effective_budget
from benchmark.edits import unified_diff
from benchmark.errors import BudgetExhausted, UserError
from benchmark.experiment import Outcome, check_isolation, run_phase
from benchmark.journal import (AGENT_FAILED, BUGGY, EDIT_FAILED, NO_OP, OK, BlobStore, Journal, Node, NodeStore,
                               now, write_json_atomic)
from benchmark.llm import LLMClient, Usage, missing_credentials
from benchmark.plugins import Registry
from benchmark.safefs import discard_tree
from benchmark.task import Budget, load_task
from benchmark.workspace import PreparedTask, open_prepared

BASELINE_ID = "0000"


@dataclass
class Counters:
    """Budget counters and tallies, checkpointed with every node."""

    experiments: int = 0
    compute_s: float = 0.0
    wall_s: float = 0.0
    unexecuted_in_a_row: int = 0
    statuses: dict[str, int] = field(default_factory=dict)

    def count(self, node: Node) -> None:
        self.statuses[node.status] = self.statuses.get(node.status, 0) + 1
        if node.executed and node.step > 0:
            self.experiments += 1
        self.compute_s = round(self.compute_s + node.seconds, 3)
        self.unexecuted_in_a_row = 0 if node.executed else self.unexecuted_in_a_row + 1


def node_id(step: int) -> str:
    return f"{step:04d}"


class Run:
    """One agent on one task, from a composed config to summary.json."""

    def __init__(self, cfg: DictConfig, registry: Registry, echo: Callable[[str], None] = print):
        self.cfg, self.registry, self.echo = cfg, registry, echo
        self.spec = load_task(registry.tasks[cfg.task.name])
        self.prepared: PreparedTask = open_prepared(self.spec)
        self.budget: Budget = effective_budget(self.spec.budget, cfg.budget)
        self.agent_spec = registry.agents[cfg.agent.name]
        if self.agent_spec.uses_llm:  # refused before anything is written, so no empty run dir is left
            problem = missing_credentials(OmegaConf.to_object(cfg.llm))
            if problem:
                raise UserError(f"agent '{self.agent_spec.name}' needs an LLM: {problem}")
        # absolute: sandboxes bind paths, and a relative one would depend on every process's cwd
        self.run_dir = Path(cfg.results_dir).absolute() / cfg.agent.name / self.spec.name / default_run_id(cfg)
        self.blobs = BlobStore(self.run_dir / "blobs")
        self.journal = Journal(self.run_dir / "journal.jsonl")
        self.store = NodeStore(self.blobs, self.spec.metric)
        self.counters = Counters()
        self.usage = Usage()
        self.llm: LLMClient | None = None
        self.stop_reason = ""
        self.final: dict[str, Any] | None = None
        self.started = time.monotonic()
        self.wall_before = 0.0
        self.provenance = report.provenance(self.spec, cfg)  # once: it shells out to git

    # ----------------------------------------------------------------------------------- setup
    def _open(self) -> bool:
        """Create or reopen the run dir; returns False when the run already finished."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        loaded = self.journal.load()
        digest = config_hash(self.cfg)
        if loaded.header and loaded.header["config_hash"] != digest:
            raise UserError(f"{self.run_dir} holds a run with a different configuration; "
                            f"pass run_id=<new name> or remove that directory")
        if loaded.header is None:
            (self.run_dir / "config.yaml").write_text(OmegaConf.to_yaml(self.cfg, resolve=True))
            self.journal.append({"kind": "header", "config_hash": digest, "created_at": now(),
                                 **self.provenance})
        for node in loaded.nodes:
            self.store.add(node)
        if loaded.checkpoint:
            self.counters = Counters(**loaded.checkpoint["counters"])
            self.usage = Usage.from_dict(loaded.checkpoint["usage"])
            self.wall_before = self.counters.wall_s
        self.final = loaded.final
        self._policy_state = loaded.checkpoint["policy"] if loaded.checkpoint else None
        if loaded.nodes or loaded.pending:
            inflight = " (re-running the in-flight step)" if loaded.pending else ""
            self.echo(f"resuming {self.run_dir} at step {len(self.store)}{inflight}")
        return self.final is None

    def _build_agent(self) -> Agent:
        agent_cfg = OmegaConf.to_object(self.cfg.agent)
        if self.agent_spec.uses_llm:
            llm_cfg = OmegaConf.to_object(self.cfg.llm)
            if llm_cfg.usd_cap is None or llm_cfg.usd_cap > self.budget.usd:
                llm_cfg.usd_cap = self.budget.usd
            if llm_cfg.cache_dir is None:
                llm_cfg.cache_dir = str(Path(self.cfg.results_dir) / "llm_cache")
            self.llm = LLMClient(llm_cfg, self.usage)
        agent = self.agent_spec.build(agent_cfg, self.spec)
        if self._policy_state is not None:
            agent.policy.load_state_dict(self._policy_state)
        return agent

    # ------------------------------------------------------------------------------------ run
    def run(self) -> dict[str, Any]:
        executor_cfg = OmegaConf.to_object(self.cfg.executor)
        self.executor = self.registry.executors[self.cfg.executor.name].build(executor_cfg)
        try:
            check_isolation(self.prepared, self.executor, self.run_dir)  # before anything is written
            if not self._open():
                summary = report.read(self.run_dir)
                self.echo("run already finished; nothing to do")
                self.echo(report.render(summary))
                return summary
            return self._run_to_end(self._build_agent())
        finally:
            self.executor.shutdown()

    def _run_to_end(self, agent: Agent) -> dict[str, Any]:
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            self.echo(report.banner(self))
            if BASELINE_ID not in self.store:
                self._baseline()
            self._search(agent)
            self._final_test()
            summary = self._write_summary("finished")
            self.registry.notify("researchbench_on_run_end", summary=summary, run=self.identity())
            self.echo(report.render(summary))
            return summary
        except KeyboardInterrupt:
            self._write_summary("interrupted")
            self.echo(f"interrupted; run the same command again to resume {self.run_dir}")
            raise
        finally:
            signal.signal(signal.SIGTERM, previous)

    def identity(self) -> dict[str, Any]:
        return {"agent": self.agent_spec.name, "task": self.spec.name, "run_dir": str(self.run_dir),
                "seed": self.cfg.seed}

    def _baseline(self) -> None:
        files = {rel: data.decode() for rel, data in self.prepared.baseline_files().items()
                 if self.spec.is_editable(rel)}
        node = Node(id=BASELINE_ID, step=0, operator="baseline", created_at=now(), plan="the task's baseline")
        self.journal.append({"kind": "pending", "id": node.id, "step": 0, "operator": "baseline", "at": now()})
        self._execute(node, files, {})
        self._finish(node, policy=None)

    def _stop_reason(self) -> str:
        b, c = self.budget, self.counters
        if c.experiments >= b.steps:
            return f"used the budget of {report.plural(b.steps, 'experiment')}"
        if c.compute_s >= b.compute_hours * 3600:
            return f"used the compute budget of {b.compute_hours:g} h"
        if c.unexecuted_in_a_row >= self.cfg.budget.max_unexecuted_in_a_row:
            return f"{c.unexecuted_in_a_row} steps in a row ran no experiment"
        return ""

    def _search(self, agent: Agent) -> None:
        while not (reason := self._stop_reason()):
            step = len(self.store)
            rng = random.Random(f"{self.cfg.seed}:{step}")
            action = agent.policy.next_action(self.store, rng)
            if action is None:
                reason = "the agent had nothing left to try"
                break
            node = Node(id=node_id(step), step=step, operator=action.operator, parents=list(action.parents),
                        tag=action.tag, hints=dict(action.hints), created_at=now())
            self.journal.append({"kind": "pending", "id": node.id, "step": step, "operator": action.operator,
                                 "parents": node.parents, "at": now()})
            self.store.claim(node)
            ctx = OpContext(task=self.spec, store=self.store, llm=self.llm, rng=rng,
                            steps_left=self.budget.steps - self.counters.experiments, budget=self.budget,
                            public_dir=self.prepared.public_dir)
            try:
                proposal = self._propose(agent, ctx, action)
            except BudgetExhausted as exc:
                self.journal.append({"kind": "abandoned", "id": node.id, "reason": str(exc), "at": now()})
                reason = f"LLM budget reached ({exc})"
                break
            node.plan = proposal.plan[:4000]
            node.llm_calls = [self._store_call(call) for call in proposal.llm_calls]
            parent_files = self.store.files(self.store.get(node.parents[0])) if node.parents else {}
            self._settle(node, proposal, parent_files)
            self._finish(node, policy=agent.policy)
        self.stop_reason = reason

    def _propose(self, agent: Agent, ctx: OpContext, action: Action) -> Proposal:
        operator = agent.operators.get(action.operator)
        if operator is None:
            return Proposal(files={}, edit_ok=False, feedback=f"agent has no operator '{action.operator}'")
        parents = [self.store.get(p) for p in action.parents]
        try:
            return operator(ctx, parents, action)
        except BudgetExhausted:
            raise
        except Exception as exc:  # a broken agent plugin fails its step, not the run
            return Proposal(files={}, edit_ok=False, feedback=f"operator crashed: {type(exc).__name__}: {exc}")

    def _settle(self, node: Node, proposal: Proposal, parent_files: dict[str, str]) -> None:
        failed_call = next((c for c in reversed(proposal.llm_calls) if c.error), None)
        node.feedback = proposal.feedback[:4000]
        if not proposal.edit_ok:
            node.status = AGENT_FAILED if failed_call or proposal.feedback.startswith("operator crashed") else EDIT_FAILED
            if failed_call and not node.feedback:
                node.feedback = f"LLM call failed: {failed_call.error}"
        elif not proposal.changed:
            node.status = NO_OP
        else:
            self._execute(node, proposal.files, parent_files)

    def _execute(self, node: Node, files: dict[str, str], parent_files: dict[str, str]) -> None:
        node.files = {rel: self.blobs.put(text) for rel, text in sorted(files.items())}
        if parent_files:
            node.diff = self.blobs.put(unified_diff(parent_files, files))
        scratch = self.run_dir / "scratch" / node.id
        outcome = run_phase(self.prepared, files, "val", self.executor, scratch, self.budget.step_timeout_s)
        self._record(node, outcome)

    def _record(self, node: Node, outcome: Outcome) -> None:
        node.executed = True
        node.exit_code, node.timed_out, node.seconds = outcome.exit_code, outcome.timed_out, outcome.seconds
        node.stdout, node.stderr = self.blobs.put(outcome.stdout), self.blobs.put(outcome.stderr)
        node.metrics, node.primary, node.bug_reason = outcome.metrics, outcome.primary, outcome.bug_reason
        node.status = OK if outcome.ok else BUGGY

    def _store_call(self, call: Any) -> dict[str, Any]:
        record = call.to_dict()
        record["messages"] = self.blobs.put(json.dumps(record.get("messages", []), sort_keys=True, ensure_ascii=False))
        record["response"] = self.blobs.put(record.get("response") or "")
        return record

    def _finish(self, node: Node, policy: Any) -> None:
        node.finished_at = now()
        self.store.add(node)
        self.counters.count(node)
        self.counters.wall_s = round(self.wall_before + time.monotonic() - self.started, 3)
        if policy is not None:
            policy.observe(node, self.store)
        checkpoint = {"policy": policy.state_dict() if policy is not None else None,
                      "counters": asdict(self.counters), "usage": self.usage.to_dict()}
        record = node.to_dict()
        self.journal.append({"kind": "finished", "node": record, "checkpoint": checkpoint})
        self.registry.notify("researchbench_on_node", node=record, run=self.identity())
        self._write_summary("running")
        if not self.cfg.quiet:
            self.echo(report.progress(self, node))

    # ----------------------------------------------------------------------------- final test
    def _final_test(self) -> None:
        best = self.store.best()
        baseline = self.store.get(BASELINE_ID)
        results: dict[str, Any] = {}
        for label, node in (("baseline", baseline), ("best", best)):
            if node is None or node.status != OK:
                results[label] = {"node": node.id if node else None, "primary": None,
                                  "error": "no valid node to test"}
                continue
            if label == "best" and node.id == baseline.id:
                results["best"] = dict(results["baseline"])
                continue
            scratch = self.run_dir / "scratch" / f"test-{node.id}"
            outcome = run_phase(self.prepared, self.store.files(node), "test", self.executor, scratch,
                                self.budget.final_test_timeout_s())
            results[label] = {"node": node.id, "primary": outcome.primary, "metrics": outcome.metrics,
                              "error": outcome.bug_reason, "seconds": outcome.seconds,
                              "stdout": self.blobs.put(outcome.stdout), "stderr": self.blobs.put(outcome.stderr)}
        self.final = {"kind": "final", "stop_reason": self.stop_reason, "at": now(), **results}
        self.journal.append(self.final)
        discard_tree(self.run_dir / "scratch")

    def _write_summary(self, status: str) -> dict[str, Any]:
        summary = report.build(self, status)
        write_json_atomic(self.run_dir / "summary.json", summary)
        return summary


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run_benchmark(cfg: DictConfig, registry: Registry, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Run (or resume, or reprint) the run the config describes; returns its summary."""
    return Run(cfg, registry, echo).run()
