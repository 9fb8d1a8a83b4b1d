"""The exceptions that end a run or a command with one line and a distinct exit code."""

from __future__ import annotations

from typing import Any


class UserError(Exception):
    """Bad input the user can fix: the message names the fix. The CLIs print it alone and exit 2."""

    exit_code = 2


class BudgetExhausted(Exception):
    """A hard budget cap (USD, tokens, compute) was reached: the run stops cleanly, not as an error."""

    def stop_reason(self) -> str:
        """Why the search stopped, as the summary and the last progress line say it."""
        return f"LLM budget reached ({self})"


class ScriptExhausted(BudgetExhausted):
    """`llm=scripted` has no reply left: the search ends like at a cap, instead of spending its
    remaining steps on failed calls."""

    def stop_reason(self) -> str:
        return str(self)


class InfrastructureFailure(Exception):
    """Something outside the agent failed (the LLM endpoint, the executor, the task's own baseline).

    Such a run is not a result: it ends with status `aborted` (exit 3), is never scored, and the same
    command resumes it once the cause is fixed. `cause` and `fix` are one line each; `details` go
    into the journal's `aborted` record beside them (benchmark/run/outage.py draws the line).
    """

    exit_code = 3

    def __init__(self, cause: str, fix: str, source: str, **details: Any):
        super().__init__(cause)
        self.cause, self.fix, self.source, self.details = cause, fix, source, details

    def renewed(self) -> InfrastructureFailure:
        """The same failure as a fresh exception: one object raised in several threads would share a traceback."""
        return InfrastructureFailure(self.cause, self.fix, self.source, **self.details)

    def console_line(self) -> str:
        return f"aborted: {self.cause} — {self.fix}; re-run the same command to resume"
