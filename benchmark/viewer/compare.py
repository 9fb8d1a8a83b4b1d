"""Runs side by side: their best-so-far curves on one chart and each run's best solution as a diff against its
baseline (what the search changed in the end, whichever path it took to get there)."""

from __future__ import annotations

import difflib
from typing import Any

from researchbench.benchmark.common.inert_text import inert
from researchbench.benchmark.viewer.catalog import Catalog, RunFolder
from researchbench.benchmark.viewer.rundata import BASELINE_ID, Blobs, run_json

DIFF_CAP = 200_000  # characters of one run's best diff


def _files(blobs: Blobs, node: dict[str, Any] | None) -> dict[str, str] | None:
    files = node.get("files") if isinstance(node, dict) else None
    if not isinstance(files, dict):
        return None
    out = {}
    for rel, digest in sorted(files.items()):
        text = blobs.text(digest)
        if text is None:
            return None  # the run did not keep its blobs (a recording): no honest diff
        out[inert(str(rel))] = text
    return out


def best_diff(catalog: Catalog, folder: RunFolder, best_id: Any) -> str | None:
    """A unified diff from the baseline's files to the best node's; None when either is not kept."""
    journal = catalog.journal(folder)
    blobs = Blobs(catalog, folder)
    base = _files(blobs, journal.finished.get(BASELINE_ID))
    best = _files(blobs, journal.finished.get(best_id)) if isinstance(best_id, str) else None
    if base is None or best is None:
        return None
    lines: list[str] = []
    for rel in sorted(base.keys() | best.keys()):
        lines += difflib.unified_diff(base.get(rel, "").splitlines(keepends=True),
                                      best.get(rel, "").splitlines(keepends=True),
                                      f"a/{rel} (baseline)", f"b/{rel} (node {best_id})")
    text = "".join(lines)
    return text[:DIFF_CAP] + (f"\n... (cut at {DIFF_CAP} characters)" if len(text) > DIFF_CAP else "")


def compare_json(catalog: Catalog, folders: list[RunFolder]) -> dict[str, Any]:
    runs = []
    for folder in folders:
        data = run_json(catalog, folder)
        runs.append({"row": data["row"], "curve": data["curve"], "metric": data["metric"],
                     "best_diff": best_diff(catalog, folder, data["row"]["best_node"])})
    tasks = sorted({r["row"]["task"] for r in runs})
    notes = [] if len(tasks) <= 1 else [f"these runs are on different tasks ({', '.join(tasks)}): their scores "
                                        "are on different scales"]
    return {"runs": runs, "notes": notes}
