"""Where an agent's failure ends and an outage begins: the failures that abort a run instead of scoring it.

A run is a result only if the agent met working infrastructure. These are not the agent's doing, so
they raise `InfrastructureFailure` (status `aborted`, exit 3, resumable, never scored):
- the LLM endpoint failed a call through all its retries, or refused the credentials, model or route
  (benchmark/llm/client.py, `endpoint_failure`);
- the executor could not run a job at all (`GuardedExecutor`: the backend failed to start, reach or
  finish it; a job that ran and crashed, timed out or broke a limit is the agent's);
- the task's own baseline (node 0000) did not produce a valid score (`baseline_failure`): no agent
  has touched anything yet;
- an LLM agent's search ended without a single usable LLM reply (`llm_never_answered`): every call
  was rejected or empty, so there was no agent to judge.
A node interrupted by one of these is never recorded: it stays pending and resume re-runs it.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import TYPE_CHECKING

from researchbench.benchmark.common.errors import InfrastructureFailure
from researchbench.benchmark.executors.base import Delegating, Executor, Job, JobResult
from researchbench.benchmark.llm.accounting import Usage
from researchbench.benchmark.records.journal import OK, Node
from researchbench.benchmark.run.display import plural

if TYPE_CHECKING:
    pass


def _first_line(text: str, limit: int = 200) -> str:
    return (text.strip().splitlines() or [""])[0][:limit]


class GuardedExecutor(Delegating):
    """The run's executor, with one rule added at the client boundary: a job the backend could not
    run at all (`JobResult.error`) makes `.result()` raise InfrastructureFailure, for the node's
    experiment, the evaluator, an agent's command and the final test alike. The first such failure
    stays in `failure`, so a step whose agent code swallowed the exception is stopped all the same.
    Everything else is the wrapped executor's own, member by member of the protocol."""

    def __init__(self, inner: Executor):
        super().__init__(inner)
        self.failure: InfrastructureFailure | None = None

    def submit(self, job: Job) -> Future[JobResult]:
        guarded: Future[JobResult] = Future()

        def relay(done: Future[JobResult]) -> None:
            try:
                result = done.result()
            except BaseException as exc:  # backends promise a JobResult; relay a broken promise as is
                guarded.set_exception(exc)
                return
            if result.error:
                failure = self._failure(result.error)
                self.failure = self.failure or failure
                guarded.set_exception(failure)
            else:
                guarded.set_result(result)

        self.inner.submit(job).add_done_callback(relay)
        return guarded

    def _failure(self, error: str) -> InfrastructureFailure:
        name = self.inner.name
        return InfrastructureFailure(f"executor '{name}' could not run a job: {_first_line(error)}",
                                     self.inner.failure_fix(), "executor", executor=name, error=error)


def baseline_failure(node: Node, task: str) -> InfrastructureFailure | None:
    """The abort a failed baseline means (its node goes into the journal's record), or None."""
    if node.status == OK:
        return None
    return InfrastructureFailure(
        f"the task's own baseline (node {node.id}) did not run: {_first_line(node.bug_reason)}",
        f"the baseline must run on this machine: `python setup.py --check {task}` shows why "
        "(processes or memory taken by other runs, a busy machine, a broken install)",
        "baseline", node=node.to_dict())


def llm_never_answered(usage: Usage, last_error: str) -> InfrastructureFailure | None:
    """The abort of a search in which the LLM made calls but none of them gave a usable reply."""
    if usage.calls == 0 or usage.failed_calls < usage.calls:
        return None
    return InfrastructureFailure(
        f"the LLM gave no usable reply in {plural(usage.calls, 'call')} ({_first_line(last_error)})",
        "check llm.model, llm.max_tokens and what the endpoint answers (a changed setting starts a new run)",
        "llm", calls=usage.calls, error=last_error)
