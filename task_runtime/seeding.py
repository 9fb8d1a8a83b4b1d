"""Seeding the global random generators before agent code runs, so code that draws from them reproduces."""

from __future__ import annotations

import importlib.util
import random
import sys

import numpy as np


def seed_everything(seed: int, import_torch: bool = False) -> None:
    """Seed `random`, numpy's global generator and torch's: torch only if already imported, or if
    `import_torch` and it is installed (so a model that imports torch later still starts seeded)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    if import_torch and "torch" not in sys.modules and importlib.util.find_spec("torch") is not None:
        import torch  # noqa: F401 - loaded to be seeded
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)
