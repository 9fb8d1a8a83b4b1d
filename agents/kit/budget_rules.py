"""How much forced exploration (drafts, expansions per leaf, a generation) a run's budget can afford.

A policy that explores a fixed number of times before it exploits spends most of a small run on
exploration it never follows up: AIDE's 5 drafts are 5 of 8 experiments, and drafts must differ, so a
failed one is never fixed. One rule for every policy: about a quarter of the run's experiments go to
one round of exploration, at least one and at most the scaffold's own setting; a setting the user
gives explicitly is used as given.
"""

from __future__ import annotations

EXPLORE_SHARE = 4  # one experiment in four on a round of exploration leaves three in four to build on it


def exploration_width(explicit: int | None, steps: int, cap: int) -> int:
    """``explicit`` when set, else ``steps // 4`` clamped to [1, cap] (cap = the scaffold's default)."""
    if explicit is not None:
        return explicit
    return max(1, min(cap, steps // EXPLORE_SHARE))
