"""Reading the agent-editable params.json: a clear error names the fix, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

from .errors import DriverError


def read_params(path: Path) -> dict:
    """The JSON object of hyper-parameters in `path`; a missing, invalid or non-object file is a DriverError."""
    try:
        params = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise DriverError(f"{path.name} is missing; it must hold a JSON object of hyper-parameters") from None
    except json.JSONDecodeError as exc:
        raise DriverError(f"{path.name} is not valid JSON: {exc}") from None
    if not isinstance(params, dict):
        raise DriverError(f"{path.name} must hold a JSON object, got {type(params).__name__}")
    return params
