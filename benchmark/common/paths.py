"""Where the checkout is: `ml_tasks/`, `configs/` and the entry points sit at its root, beside `benchmark/`."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
