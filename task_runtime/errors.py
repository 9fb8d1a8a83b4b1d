"""The two failures a task reports as one line: bad driver inputs or model output, and unscorable predictions.

Both are expected outcomes of running hostile agent code, not harness bugs, so `driver_main` and
`evaluator_main` turn them into one line on stderr and exit code 1 instead of a traceback.
"""

from __future__ import annotations


class DriverError(Exception):
    """A problem with the inputs or with what the agent's code returned: the driver reports it as one line."""


class InvalidPredictions(Exception):
    """The predictions cannot be scored; the message is the one line the harness records."""
