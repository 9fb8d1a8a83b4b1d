"""The one exception type that reaches the user as a single line and exit code 2."""


class UserError(Exception):
    """Bad input the user can fix: the message names the fix. The CLIs print it alone and exit 2."""

    exit_code = 2


class BudgetExhausted(Exception):
    """A hard budget cap (USD, tokens, compute) was reached: the run stops cleanly, not as an error."""
