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
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf

from researchbench.benchmark.common.errors import InfrastructureFailure, UserError
from researchbench.benchmark.common.inert_text import install_log_filter
from researchbench.benchmark.contract.agent_api import Agent, OpContext, Policy
from researchbench.benchmark.executors.base import completed, config_of
from researchbench.benchmark.llm.accounting import Usage
from researchbench.benchmark.llm.client import LLMClient
from researchbench.benchmark.plugins.manager import Registry
from researchbench.benchmark.records import owner
from researchbench.benchmark.records.journal import BASELINE_ID, BlobStore, Journal, Loaded, Node, NodeStore, now
from researchbench.benchmark.records.kinds import Aborted, Checkpoint, Finished, Header, Pending
from researchbench.benchmark.records.summary import RunSummary, read_summary, write_summary
from researchbench.benchmark.run import summary as report
from researchbench.benchmark.run.budget import Counters
from researchbench.benchmark.run.config import config_hash, default_run_id, effective_budget
from researchbench.benchmark.run.display import Display, Stats, make_display, plural
from researchbench.benchmark.run.experiment import check_cache_dir, check_isolation, data_path_in_jobs
from researchbench.benchmark.run.final_test import final_test
from researchbench.benchmark.run.outage import GuardedExecutor, baseline_failure, llm_never_answered
from researchbench.benchmark.run.preflight import check_values, llm_problem
from researchbench.benchmark.run.scheduler import Scheduler
from researchbench.benchmark.run.state import RunState
from researchbench.benchmark.run.worker import StepRunner
from researchbench.benchmark.scoring.export import BEST_DIR, REPORT, export_after_run
from researchbench.benchmark.tasks.environment import requirement_versions
from researchbench.benchmark.tasks.manifest import load_task
from researchbench.benchmark.tasks.workspace import open_prepared


class Run:
    """One agent on one task, from a composed config to summary.json."""

    def __init__(self, cfg: DictConfig, registry: Registry, echo: Callable[[str], None] | None = None,
                 display: Display | None = None):
        self.cfg, self.registry = cfg, registry
        check_values(cfg)  # the CLI checked them already; a run started from code is checked here
        self.parallel: int = cfg.parallel
        manifest = load_task(registry.tasks[cfg.task.name])
        # the task as this run has it: the manifest with the run's budget overrides, the one meaning of
        # `task.budget` everywhere (the agent's build, every operator's ctx.task, the description's numbers)
        spec = replace(manifest, budget=effective_budget(manifest.budget, cfg.budget))
        self.agent_spec = registry.agents[cfg.agent.name]
        problem = llm_problem(self.agent_spec, cfg)  # refused before anything is written: no empty run dir
        if problem:
            raise UserError(problem)
        # absolute: sandboxes bind paths, and a relative one would depend on every process's cwd
        run_dir = Path(cfg.results_dir).absolute() / cfg.agent.name / spec.name / default_run_id(cfg)
        blobs = BlobStore(run_dir / "blobs")
        self.state = RunState(
            spec=spec, agent=self.agent_spec.name, uses_llm=bool(self.agent_spec.uses_llm), seed=cfg.seed,
            run_dir=run_dir, budget=spec.budget, prepared=open_prepared(spec),
            blobs=blobs, journal=Journal(run_dir / "journal.jsonl"), store=NodeStore(blobs, spec.metric),
            display=display or make_display(echo, cfg.quiet),
            provenance=report.provenance(spec, cfg))  # once: it shells out to git
        self.llm: LLMClient | None = None
        self.state.display.attach(self.stats)
        self.libraries = requirement_versions(spec)  # once: prompts state the job's library versions

    # ----------------------------------------------------------------------------------- setup
    def _open(self) -> Loaded:
        """Create or reopen the run dir and restore what the journal holds."""
        state = self.state
        state.run_dir.mkdir(parents=True, exist_ok=True)
        loaded = state.journal.load()
        digest = config_hash(self.cfg)
        if loaded.header and loaded.header.config_hash != digest:
            raise UserError(f"{state.run_dir} holds a run with a different configuration; "
                            f"pass run_id=<new name> or remove that directory")
        if loaded.header is None:
            (state.run_dir / "config.yaml").write_text(OmegaConf.to_yaml(self.cfg, resolve=True))
            state.journal.append(Header(config_hash=digest, created_at=now(), provenance=state.provenance))
        for node in loaded.nodes:
            state.store.add(node)
        if loaded.checkpoint:
            state.counters = Counters(**loaded.checkpoint.counters)
            state.usage = Usage.from_dict(loaded.checkpoint.usage)
            state.wall_before = state.counters.wall_s
        state.final = loaded.final
        return loaded

    def _build_agent(self, policy_state: dict[str, Any] | None) -> Agent:
        state = self.state
        agent_cfg = OmegaConf.to_object(self.cfg.agent)
        if self.agent_spec.uses_llm:
            llm_cfg = OmegaConf.to_object(self.cfg.llm)
            if llm_cfg.usd_cap is None or llm_cfg.usd_cap > state.budget.usd:
                llm_cfg.usd_cap = state.budget.usd
            if llm_cfg.cache_dir is None:
                llm_cfg.cache_dir = str(Path(self.cfg.results_dir) / "llm_cache")
            self.llm = LLMClient(llm_cfg, state.usage)
        # the task as this run sees it: policies that plan by the budget (stages, phases) get the overrides
        agent = self.agent_spec.build(agent_cfg, state.spec)
        if policy_state is not None:
            agent.policy.load_state_dict(policy_state)
        return agent

    def _build_executor(self) -> GuardedExecutor:
        """The configured executor, with a slot for each of the `parallel` jobs and a GPU set for each."""
        state = self.state
        executor_cfg = OmegaConf.to_object(self.cfg.executor)
        k, wanted = self.parallel, state.spec.resources.gpus
        problem = config_of(executor_cfg).for_run(k, wanted, state.spec.name)
        if problem:
            raise UserError(problem)
        executor = completed(self.registry.executors[self.cfg.executor.name].build(executor_cfg))
        executor.bind_run(state.spec, state.run_dir)  # remote backends: the task's image, the run's tag
        guarded = GuardedExecutor(executor)  # a job the backend cannot run aborts the run
        if guarded.capacity < k:
            state.display.line(f"note: executor '{guarded.name}' runs {guarded.capacity} job(s) at once; "
                              f"parallel={k} nodes will wait for its slots")
        cpus = (os.cpu_count() or 1)
        if k * state.spec.resources.cpus > cpus and not guarded.runs_remotely:  # remote jobs use remote CPUs
            state.display.line(f"note: parallel={k} jobs x {state.spec.resources.cpus} CPU(s) each exceeds this "
                              f"machine's {cpus} CPUs; experiments will slow each other down")
        return guarded

    # ------------------------------------------------------------------------------------ run
    def run(self) -> dict[str, Any]:
        state = self.state
        install_log_filter()  # warnings quote evaluator stderr and agent commands: inert on every handler
        state.executor = self._build_executor()
        try:
            check_isolation(state.prepared, state.executor, state.run_dir)  # before anything is written
            if self.agent_spec.uses_llm:
                check_cache_dir(state.prepared, state.executor, state.run_dir, self.cfg.llm.cache_dir)
            loaded = self._open()
            if state.final is not None:
                summary = read_summary(state.run_dir)
                state.display.line("run already finished; nothing to do")
                state.display.line(report.render(summary))
                if not (state.run_dir / BEST_DIR).is_dir() or not (state.run_dir / REPORT).is_file():
                    export_after_run(state.run_dir, state.display.line)  # a failed or deleted export, written again
                return summary.raw
            agent = self._build_agent(loaded.policy)
            self.steps = StepRunner(state.prepared, state.executor, state.blobs, state.budget,
                                    state.run_dir / "scratch", state.display, seed=self.cfg.seed)
            return self._run_to_end(agent, loaded)
        finally:
            state.executor.shutdown()

    def _run_to_end(self, agent: Agent, loaded: Loaded) -> dict[str, Any]:
        state = self.state
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        owner.claim(state.run_dir)  # readers (the viewer) tell a live run from one killed hard
        try:
            with state.display:
                state.display.line(report.banner(state))
                if (drift := report.environment_line(state.provenance)) is not None:
                    state.display.line(drift)
                if loaded.nodes or loaded.pending:
                    again = f" (re-running {plural(len(loaded.pending), 'in-flight step')})" \
                        if loaded.pending else ""
                    before = f"; it was aborted: {loaded.aborted.cause}" if loaded.aborted else ""
                    state.display.line(f"resuming {state.run_dir} at step {len(state.store)}{again}{before}")
                if BASELINE_ID not in state.store:
                    self._baseline(agent)
                scheduler = Scheduler(state, agent, self.parallel, next_step=max(loaded.next_step, 1),
                                      context=self.context, work=self.steps.step, finish=self.finish,
                                      max_unexecuted_in_a_row=self.cfg.budget.max_unexecuted_in_a_row)
                state.stop_reason = scheduler.search([r for r in loaded.pending if r.id != BASELINE_ID])
                silent = llm_never_answered(state.usage, self.llm.last_error) if self.llm is not None else None
                if silent is not None:
                    raise silent
                state.final = final_test(state)
                state.journal.append(state.final)
                summary = self._write_summary("finished")
                self.registry.notify("researchbench_on_run_end", summary=summary.raw, run=self.identity())
            state.display.line(report.render(summary))
            export_after_run(state.run_dir, state.display.line)
            return summary.raw
        except InfrastructureFailure as exc:
            state.journal.append(Aborted(cause=exc.cause, fix=exc.fix, source=exc.source, details=exc.details,
                                         at=now()))
            summary = self._write_summary("aborted", abort_cause=exc.cause)
            self.registry.notify("researchbench_on_run_end", summary=summary.raw, run=self.identity())
            raise
        except KeyboardInterrupt:
            summary = self._write_summary("interrupted")
            self.registry.notify("researchbench_on_run_end", summary=summary.raw, run=self.identity())
            state.display.line(f"interrupted; run the same command again to resume {state.run_dir}")
            raise
        finally:
            owner.release(state.run_dir)
            signal.signal(signal.SIGTERM, previous)

    def identity(self) -> dict[str, Any]:
        return {"agent": self.agent_spec.name, "task": self.state.spec.name, "run_dir": str(self.state.run_dir),
                "seed": self.cfg.seed}

    def stats(self) -> Stats:
        """Headline numbers for the live view."""
        state = self.state
        best = state.store.best()
        shown = f"{state.spec.metric.name}={best.primary:.4f} (node {best.id})" if best else "n/a"
        return Stats(experiments=state.counters.experiments, budget=state.budget.steps, best=shown,
                     tokens=state.usage.total_tokens, usd=state.usage.reported_usd if self.llm is not None else None,
                     offline=state.usage.offline)

    def context(self, step: int, others_in_flight: int) -> OpContext:
        """What an operator or analyzer of node `step` gets; its RNG depends on (seed, step) alone."""
        state = self.state
        return OpContext(task=state.spec, store=state.store, llm=self.llm,
                         rng=random.Random(f"{self.cfg.seed}:{step}:operator"),
                         steps_left=state.budget.steps - state.counters.experiments - others_in_flight,
                         budget=state.budget, public_dir=state.prepared.public_dir,
                         data_path=data_path_in_jobs(state.prepared, state.executor),
                         compute_left_s=state.budget.compute_hours * 3600 - state.counters.compute_s,
                         libraries=self.libraries)

    def _baseline(self, agent: Agent) -> None:
        """The task's own code, run first and reviewed like any node (a budget stop resurfaces at the next call).

        A baseline without a valid score is not recorded: it aborts the run and is re-run on resume."""
        state = self.state
        files = {rel: data.decode() for rel, data in state.prepared.baseline_files().items()
                 if state.spec.is_editable(rel)}
        node = Node(id=BASELINE_ID, step=0, operator="baseline", created_at=now(), plan="the task's baseline")
        state.journal.append(Pending(id=node.id, step=0, operator="baseline", at=now()))
        self.steps.execute(node, files, {})
        failed = baseline_failure(node, state.spec.name)
        if failed is not None:
            raise failed
        if agent.analyze is not None:
            self.steps.analyze(agent, self.context(0, 0), node)
        state.display.job_done(node.id)
        self.finish(node, policy=None)

    def finish(self, node: Node, policy: Policy | None) -> Exception | None:
        """Record a finished node with the checkpoint that follows it; the one place nodes are recorded.

        Returns what policy.observe raised, if it did: the node is recorded all the same.
        """
        state = self.state
        node.finished_at = now()
        state.store.add(node)
        state.counters.count(node)
        state.counters.wall_s = round(state.wall_seconds(), 3)
        crash = None
        if policy is not None:
            try:
                policy.observe(node, state.store)
            except Exception as exc:  # the scheduler stops the search and reports it
                crash = exc
        checkpoint = Checkpoint(policy=policy.state_dict() if policy is not None else None,
                                counters=asdict(state.counters), usage=state.usage.to_dict())
        state.journal.append(Finished(node, checkpoint))
        self.registry.notify("researchbench_on_node", node=node.to_dict(), run=self.identity())
        self._write_summary("running")
        state.display.node_line(report.progress(self.state, node))
        return crash

    def _write_summary(self, status: str, abort_cause: str | None = None) -> RunSummary:
        """summary.json as of now, through its one writer; returns what a reader reads back."""
        return write_summary(self.state.run_dir, report.build(self.state, status, abort_cause))


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
