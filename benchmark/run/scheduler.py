"""The search loop: keep up to K nodes in flight, record results in the order they arrive.

On the main thread: ask the policy for an action, write the write-ahead `pending` record (the action
and the policy state after choosing it), claim the node in the store, hand it to a worker thread; when
a worker's result arrives, record the node, let the policy observe it and checkpoint. The policy is
asked again while others run and sees them through `store.pending()`; every node is claimed before
the policy is asked again, so a pending-aware policy never hands out the same work twice. With K=1
this is exactly the sequential loop: ask, run, record.

Resume re-runs the nodes that were in flight (pending records without a finished one) with the very
actions recorded, after restoring the policy state that followed choosing them: the policy already
handed that work out, and asking it again would forget it (an MCTS expansion, an agenda entry).
Randomness is per step: the policy gets Random("seed:step") and the operator its own
Random("seed:step:operator"), so a re-run operator draws what it would have drawn the first time.

Workers are daemon threads, one per in-flight node: an interrupted run exits without waiting for an
LLM reply nobody will record.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
from typing import Callable

from researchbench.benchmark.contract.agent_api import Action, Agent, OpContext, Policy
from researchbench.benchmark.records.journal import Node, now
from researchbench.benchmark.records.kinds import Abandoned, Pending, PolicyCrash
from researchbench.benchmark.run.budget import launch_blocker
from researchbench.benchmark.run.state import RunState
from researchbench.benchmark.run.worker import StepResult, crash_report

log = logging.getLogger(__name__)


def node_id(step: int) -> str:
    return f"{step:04d}"


class Scheduler:
    """Runs the search phase of one run with `parallel` nodes in flight at most.

    It gets the run's state and the engine's three services as functions: `context(step, others_in_flight)`
    builds an operator's OpContext, `work(agent, node, action, ctx)` runs a node's step (on a worker
    thread), and `finish(node, policy)` records a finished node (returning what policy.observe raised).
    """

    def __init__(self, run: RunState, agent: Agent, parallel: int, next_step: int, *,
                 context: Callable[[int, int], OpContext],
                 work: Callable[[Agent, Node, Action, OpContext], StepResult],
                 finish: Callable[[Node, Policy], Exception | None], max_unexecuted_in_a_row: int):
        self.run, self.agent, self.parallel = run, agent, parallel
        self.context, self.step_work, self.finish = context, work, finish
        self.max_unexecuted_in_a_row = max_unexecuted_in_a_row
        self.next_step = next_step
        self.in_flight: dict[str, Node] = {}
        self.results: queue.Queue[tuple[Node, StepResult | BaseException]] = queue.Queue()
        self.halt = ""  # a reason to launch nothing more, whatever the budget says

    def search(self, resumed: list[Pending]) -> str:
        """Search until the budget or the agent says stop; returns why it stopped."""
        for record in resumed:
            self._launch(record.step, Action(record.operator, tuple(record.parents), dict(record.hints), record.tag))
        while True:
            while len(self.in_flight) < self.parallel and not self._blocker():
                action = self._ask()
                if action is None:
                    if not self.in_flight and not self.halt:
                        self.halt = "the agent had nothing left to try"
                    break  # with work in flight, ask again once a result has arrived
                self._launch(self.next_step, action)
            if not self.in_flight:
                return self._blocker()
            node, result = self.results.get()
            self._arrived(node, result)

    def _blocker(self) -> str:
        run = self.run
        return self.halt or launch_blocker(run.budget, run.counters, len(self.in_flight),
                                           self.max_unexecuted_in_a_row)

    def _ask(self) -> Action | None:
        """The policy's next action; a crashing policy ends the search (its state is unknown now)."""
        rng = random.Random(f"{self.run.seed}:{self.next_step}")
        try:
            return self.agent.policy.next_action(self.run.store, rng)
        except Exception as exc:
            self._policy_crashed("next_action", exc)
            return None

    def _policy_crashed(self, where: str, exc: Exception) -> None:
        log.error("policy.%s crashed", where, exc_info=exc)
        report = crash_report(exc)
        self.run.journal.append(PolicyCrash(where=where, traceback=report, at=now()))
        self.run.display.line(f"the policy crashed in {where}: {report}")
        self.halt = self.halt or f"the policy crashed in {where}: {report.splitlines()[0]}"

    def _launch(self, step: int, action: Action) -> None:
        run = self.run
        node = Node(id=node_id(step), step=step, operator=action.operator, parents=list(action.parents),
                    tag=action.tag, hints=dict(action.hints), created_at=now())
        run.journal.append(Pending(id=node.id, step=step, operator=action.operator, at=now(), parents=node.parents,
                                   hints=node.hints, tag=node.tag, policy=self.agent.policy.state_dict()))
        ctx = self.context(step, len(self.in_flight))
        run.store.claim(node)
        self.in_flight[node.id] = node
        self.next_step = max(self.next_step, step + 1)
        threading.Thread(target=self._work, args=(node, action, ctx), name=f"researchbench-node-{node.id}",
                         daemon=True).start()

    def _work(self, node: Node, action: Action, ctx: OpContext) -> None:
        try:
            outcome: StepResult | BaseException = self.step_work(self.agent, node, action, ctx)
        except BaseException as exc:  # a harness fault: the main thread re-raises it
            outcome = exc
        self.results.put((node, outcome))

    def _arrived(self, node: Node, result: StepResult | BaseException) -> None:
        """Record one result, on the main thread, in the order results arrive."""
        del self.in_flight[node.id]
        self.run.display.job_done(node.id)
        if isinstance(result, BaseException):
            raise result
        if result.abandoned:
            self.run.store.unclaim(node)
            self.run.journal.append(Abandoned(id=node.id, reason=result.abandoned, at=now()))
            self.halt = result.abandoned
            return
        if result.stop:
            self.halt = result.stop
        crash = self.finish(node, self.agent.policy)
        if crash is not None:
            self._policy_crashed("observe", crash)
