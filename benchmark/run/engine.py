"""One run, start to end: open or resume the run dir, baseline, search, final test, summary.

The parts live next door, one job each: benchmark/run/scheduler.py keeps up to `parallel` nodes in flight,
benchmark/run/worker.py does one node's work off the main thread, benchmark/run/budget.py decides whether
another experiment may start, benchmark/run/final_test.py scores on the hidden test set and
benchmark/run/display.py shows progress. This module owns the run's state and the one place a finished
node is recorded (store, counters, policy, journal checkpoint, summary), so a killed run resumes where
it stopped: finished nodes are never repeated and at most the `parallel` in-flight nodes are re-run.
An outage (benchmark/run/outage.py) ends the run the same way, as `aborted` with its cause in the journal
and summary.json, and the same command resumes it.
"""

from __future__ import annotations

import os
import random
import signal
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf

from benchmark.common.errors import InfrastructureFailure, UserError
from benchmark.common.inert_text import install_log_filter
from benchmark.executors.gpus import slots_problem
from benchmark.llm.accounting import Usage
from benchmark.llm.client import LLMClient
from benchmark.plugins.agent_api import Agent, OpContext, Policy
from benchmark.plugins.manager import Registry
from benchmark.records import owner
from benchmark.records.journal import ABORTED, BlobStore, Journal, Loaded, Node, NodeStore, now, write_json_atomic
from benchmark.run import summary as report
from benchmark.run.budget import Counters
from benchmark.run.config import config_hash, default_run_id, effective_budget
from benchmark.run.display import Display, Stats, make_display
from benchmark.run.experiment import check_cache_dir, check_isolation, data_path_in_jobs
from benchmark.run.final_test import BASELINE_ID, final_test
from benchmark.run.outage import GuardedExecutor, baseline_failure, llm_never_answered
from benchmark.run.preflight import check_values, llm_problem
from benchmark.run.scheduler import Scheduler
from benchmark.run.worker import StepRunner
from benchmark.scoring.export import BEST_DIR, REPORT, export_after_run
from benchmark.tasks.environment import requirement_versions
from benchmark.tasks.manifest import Budget, load_task
from benchmark.tasks.workspace import PreparedTask, open_prepared


class Run:
    """One agent on one task, from a composed config to summary.json."""

    def __init__(self, cfg: DictConfig, registry: Registry, echo: Callable[[str], None] | None = None,
                 display: Display | None = None):
        self.cfg, self.registry = cfg, registry
        check_values(cfg)  # the CLI checked them already; a run started from code is checked here
        self.parallel: int = cfg.parallel
        self.spec = load_task(registry.tasks[cfg.task.name])
        self.prepared: PreparedTask = open_prepared(self.spec)
        self.budget: Budget = effective_budget(self.spec.budget, cfg.budget)
        self.agent_spec = registry.agents[cfg.agent.name]
        problem = llm_problem(self.agent_spec, cfg)  # refused before anything is written: no empty run dir
        if problem:
            raise UserError(problem)
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
        self.display = display or make_display(echo, cfg.quiet)
        self.display.attach(self.stats)
        self.provenance = report.provenance(self.spec, cfg)  # once: it shells out to git
        self.libraries = requirement_versions(self.spec)  # once: prompts state the job's library versions

    # ----------------------------------------------------------------------------------- setup
    def _open(self) -> Loaded:
        """Create or reopen the run dir and restore what the journal holds."""
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
        return loaded

    def _build_agent(self, policy_state: dict[str, Any] | None) -> Agent:
        agent_cfg = OmegaConf.to_object(self.cfg.agent)
        if self.agent_spec.uses_llm:
            llm_cfg = OmegaConf.to_object(self.cfg.llm)
            if llm_cfg.usd_cap is None or llm_cfg.usd_cap > self.budget.usd:
                llm_cfg.usd_cap = self.budget.usd
            if llm_cfg.cache_dir is None:
                llm_cfg.cache_dir = str(Path(self.cfg.results_dir) / "llm_cache")
            self.llm = LLMClient(llm_cfg, self.usage)
        # the task as this run sees it: policies that plan by the budget (stages, phases) get the overrides
        agent = self.agent_spec.build(agent_cfg, replace(self.spec, budget=self.budget))
        if policy_state is not None:
            agent.policy.load_state_dict(policy_state)
        return agent

    def _build_executor(self) -> GuardedExecutor:
        """The configured executor, with a slot for each of the `parallel` jobs and a GPU set for each."""
        executor_cfg = OmegaConf.to_object(self.cfg.executor)
        k, wanted = self.parallel, self.spec.resources.gpus
        if hasattr(executor_cfg, "max_parallel"):
            executor_cfg.max_parallel = max(int(executor_cfg.max_parallel), k)
        if hasattr(executor_cfg, "gpus"):
            if not wanted:  # GPU ids only matter to jobs that want GPUs; without them the slots are CPU slots
                executor_cfg.gpus = []
            problem = slots_problem(executor_cfg.gpus, getattr(executor_cfg, "jobs_per_gpu", 1), k, wanted,
                                    self.spec.name)
            if problem:
                raise UserError(problem)
        executor = self.registry.executors[self.cfg.executor.name].build(executor_cfg)
        bind_run = getattr(executor, "bind_run", None)  # remote backends: the task's image, the run's tag
        if bind_run is not None:
            bind_run(self.spec, self.run_dir)
        executor = GuardedExecutor(executor)  # a job the backend cannot run aborts the run
        if executor.capacity < k:
            self.display.line(f"note: executor '{executor.name}' runs {executor.capacity} job(s) at once; "
                              f"parallel={k} nodes will wait for its slots")
        cpus = (os.cpu_count() or 1)
        if k * self.spec.resources.cpus > cpus and executor.sandbox_mode != "modal":  # remote jobs use remote CPUs
            self.display.line(f"note: parallel={k} jobs x {self.spec.resources.cpus} CPU(s) each exceeds this "
                              f"machine's {cpus} CPUs; experiments will slow each other down")
        return executor

    # ------------------------------------------------------------------------------------ run
    def run(self) -> dict[str, Any]:
        install_log_filter()  # warnings quote evaluator stderr and agent commands: inert on every handler
        self.executor = self._build_executor()
        try:
            check_isolation(self.prepared, self.executor, self.run_dir)  # before anything is written
            if self.agent_spec.uses_llm:
                check_cache_dir(self.prepared, self.executor, self.run_dir, self.cfg.llm.cache_dir)
            loaded = self._open()
            if self.final is not None:
                summary = report.read(self.run_dir)
                self.display.line("run already finished; nothing to do")
                self.display.line(report.render(summary))
                if not (self.run_dir / BEST_DIR).is_dir() or not (self.run_dir / REPORT).is_file():
                    export_after_run(self.run_dir, self.display.line)  # a failed or deleted export, written again
                return summary
            agent = self._build_agent(loaded.policy)
            self.steps = StepRunner(self.prepared, self.executor, self.blobs, self.budget,
                                    self.run_dir / "scratch", self.display, seed=self.cfg.seed)
            return self._run_to_end(agent, loaded)
        finally:
            self.executor.shutdown()

    def _run_to_end(self, agent: Agent, loaded: Loaded) -> dict[str, Any]:
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        owner.claim(self.run_dir)  # readers (the viewer) tell a live run from one killed hard
        try:
            with self.display:
                self.display.line(report.banner(self))
                if (drift := report.environment_line(self.provenance)) is not None:
                    self.display.line(drift)
                if loaded.nodes or loaded.pending:
                    again = f" (re-running {report.plural(len(loaded.pending), 'in-flight step')})" \
                        if loaded.pending else ""
                    before = f"; it was aborted: {loaded.aborted['cause']}" if loaded.aborted else ""
                    self.display.line(f"resuming {self.run_dir} at step {len(self.store)}{again}{before}")
                if BASELINE_ID not in self.store:
                    self._baseline(agent)
                scheduler = Scheduler(self, agent, self.parallel, next_step=max(loaded.next_step, 1))
                self.stop_reason = scheduler.search([r for r in loaded.pending if r["id"] != BASELINE_ID])
                silent = llm_never_answered(self.usage, self.llm.last_error) if self.llm is not None else None
                if silent is not None:
                    raise silent
                self.final = final_test(self)
                self.journal.append(self.final)
                summary = self._write_summary("finished")
                self.registry.notify("researchbench_on_run_end", summary=summary, run=self.identity())
            self.display.line(report.render(summary))
            export_after_run(self.run_dir, self.display.line)
            return summary
        except InfrastructureFailure as exc:
            self.journal.append({"kind": ABORTED, "cause": exc.cause, "fix": exc.fix, "source": exc.source,
                                 "details": exc.details, "at": now()})
            summary = self._write_summary("aborted", abort_cause=exc.cause)
            self.registry.notify("researchbench_on_run_end", summary=summary, run=self.identity())
            raise
        except KeyboardInterrupt:
            summary = self._write_summary("interrupted")
            self.registry.notify("researchbench_on_run_end", summary=summary, run=self.identity())
            self.display.line(f"interrupted; run the same command again to resume {self.run_dir}")
            raise
        finally:
            owner.release(self.run_dir)
            signal.signal(signal.SIGTERM, previous)

    def identity(self) -> dict[str, Any]:
        return {"agent": self.agent_spec.name, "task": self.spec.name, "run_dir": str(self.run_dir),
                "seed": self.cfg.seed}

    def stats(self) -> Stats:
        """Headline numbers for the live view."""
        best = self.store.best()
        shown = f"{self.spec.metric.name}={best.primary:.4f} (node {best.id})" if best else "n/a"
        return Stats(experiments=self.counters.experiments, budget=self.budget.steps, best=shown,
                     tokens=self.usage.total_tokens, usd=self.usage.reported_usd if self.llm is not None else None,
                     offline=self.usage.offline)

    def context(self, step: int, others_in_flight: int) -> OpContext:
        """What an operator or analyzer of node `step` gets; its RNG depends on (seed, step) alone."""
        return OpContext(task=self.spec, store=self.store, llm=self.llm,
                         rng=random.Random(f"{self.cfg.seed}:{step}:operator"),
                         steps_left=self.budget.steps - self.counters.experiments - others_in_flight,
                         budget=self.budget, public_dir=self.prepared.public_dir,
                         data_path=data_path_in_jobs(self.prepared, self.executor),
                         compute_left_s=self.budget.compute_hours * 3600 - self.counters.compute_s,
                         libraries=self.libraries)

    def _baseline(self, agent: Agent) -> None:
        """The task's own code, run first and reviewed like any node (a budget stop resurfaces at the next call).

        A baseline without a valid score is not recorded: it aborts the run and is re-run on resume."""
        files = {rel: data.decode() for rel, data in self.prepared.baseline_files().items()
                 if self.spec.is_editable(rel)}
        node = Node(id=BASELINE_ID, step=0, operator="baseline", created_at=now(), plan="the task's baseline")
        self.journal.append({"kind": "pending", "id": node.id, "step": 0, "operator": "baseline", "at": now()})
        self.steps.execute(node, files, {})
        failed = baseline_failure(node, self.spec.name)
        if failed is not None:
            raise failed
        if agent.analyze is not None:
            self.steps.analyze(agent, self.context(0, 0), node)
        self.display.job_done(node.id)
        self.finish(node, policy=None)

    def finish(self, node: Node, policy: Policy | None) -> Exception | None:
        """Record a finished node with the checkpoint that follows it; the one place nodes are recorded.

        Returns what policy.observe raised, if it did: the node is recorded all the same.
        """
        node.finished_at = now()
        self.store.add(node)
        self.counters.count(node)
        self.counters.wall_s = round(self.wall_before + time.monotonic() - self.started, 3)
        crash = None
        if policy is not None:
            try:
                policy.observe(node, self.store)
            except Exception as exc:  # the scheduler stops the search and reports it
                crash = exc
        checkpoint = {"policy": policy.state_dict() if policy is not None else None,
                      "counters": asdict(self.counters), "usage": self.usage.to_dict()}
        record = node.to_dict()
        self.journal.append({"kind": "finished", "node": record, "checkpoint": checkpoint})
        self.registry.notify("researchbench_on_node", node=record, run=self.identity())
        self._write_summary("running")
        self.display.node_line(report.progress(self, node))
        return crash

    def _write_summary(self, status: str, abort_cause: str | None = None) -> dict[str, Any]:
        summary = report.build(self, status, abort_cause)
        write_json_atomic(self.run_dir / "summary.json", summary)
        return summary


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run_benchmark(cfg: DictConfig, registry: Registry, echo: Callable[[str], None] | None = None,
                  display: Display | None = None) -> dict[str, Any]:
    """Run (or resume, or reprint) the run the config describes; returns its summary.

    Raises InfrastructureFailure when the run was aborted (its summary says so), UserError on bad input.

    Output goes to `display` when given, else to `echo` as plain lines, else to stdout (a live view
    on a terminal).
    """
    return Run(cfg, registry, echo, display).run()
