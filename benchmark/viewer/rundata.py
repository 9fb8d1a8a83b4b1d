"""One run as JSON for its page: the header numbers, the search tree, the best-so-far curve (polled while the
run goes on), and one node in full (plan, diff, output, prompts and replies) when it is opened.

Every string that comes from the run passes `inert` (no control bytes, no escape sequences) and blob texts are
capped; the page puts them into the document with textContent only. Blobs are read by their sha256 digest
from the run's own blobs/ folder, never by a path a record names.
"""

from __future__ import annotations

import json
import re
from typing import Any

from researchbench.benchmark.common.inert_text import inert
from researchbench.benchmark.llm.accounting import OFFLINE_LABEL
from researchbench.benchmark.viewer.catalog import Catalog, RunFolder, number
from researchbench.benchmark.viewer.journal_view import JournalView

BASELINE_ID = "0000"
TEXT_CAP = 200_000  # bytes of one blob shown (a job's stream is capped at 1 MB by the harness)
MESSAGES_CAP = 2_000_000  # one call's prompt, all its messages
DIGEST = re.compile(r"[0-9a-f]{64}")


def clean(value: Any, depth: int = 0) -> Any:
    """A JSON value from a run with every string made inert (keys too) and nesting bounded."""
    if isinstance(value, str):
        return inert(value)
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return value
    if depth > 20:
        return "(nested too deep)"
    if isinstance(value, dict):
        return {inert(str(k)): clean(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(v, depth + 1) for v in value]
    return inert(str(value))


def _sign(direction: str) -> float:
    return 1.0 if direction == "higher" else -1.0


def node_row(node: dict[str, Any], checkpoint: dict[str, Any]) -> dict[str, Any]:
    """What the tree and the curve need of a node (the heavy parts stay behind until it is opened)."""
    limit = node.get("time_limit") if isinstance(node.get("time_limit"), dict) else {}
    counters = checkpoint.get("counters") if isinstance(checkpoint.get("counters"), dict) else {}
    return clean({
        "id": node.get("id"), "step": node.get("step"), "operator": node.get("operator"),
        "parents": [p for p in node.get("parents") or [] if isinstance(p, str)]
        if isinstance(node.get("parents"), list) else [],
        "status": node.get("status"), "primary": number(node.get("primary")),
        "executed": node.get("executed") is True, "seconds": number(node.get("seconds")),
        "cpu_seconds": number(node.get("cpu_seconds")), "limit_s": number(limit.get("seconds")),
        "limit_kind": limit.get("kind") or node.get("clock") or "", "timed_out": node.get("timed_out") is True,
        "spent": number(counters.get("experiments")), "finished_at": number(node.get("finished_at")),
        "plan_head": inert(str(node.get("plan") or ""), multiline=False)[:160],
    })


def curve(nodes: list[dict[str, Any]], direction: str) -> list[dict[str, Any]]:
    """Per finished node with a validation score: experiments spent when it finished, its score and the best
    so far (the baseline at 0 experiments)."""
    sign, best, points, spent = _sign(direction), None, [], 0
    for node in nodes:
        if node["executed"] and node["id"] != BASELINE_ID:
            spent += 1
        x = node["spent"] if node["spent"] is not None else spent
        value = node["primary"] if node["status"] == "ok" else None
        if value is not None and (best is None or sign * value > sign * best):
            best = value
        points.append({"node": node["id"], "x": x, "val": value, "best": best})
    return points


def run_json(catalog: Catalog, folder: RunFolder) -> dict[str, Any]:
    """The run page's data: header row, limits and usage, nodes, in-flight nodes, curve, notes."""
    summary = catalog.summary(folder)
    raw = summary.raw if summary else {}  # its objects go to the page as written (cleaned), keys and all
    journal: JournalView = catalog.journal(folder)
    row = catalog.row(folder)
    nodes = [node_row(n, journal.checkpoints.get(i, {})) for i, n in journal.finished.items()]
    budget = raw.get("budget") or {}  # an object: the summary's parse checked it
    notes = list(journal.notes[-20:]) + ([row["status_note"]] if row["status_note"] else [])
    if journal.aborted is not None:
        notes.append(f"aborted: {journal.aborted.get('cause')} (fix: {journal.aborted.get('fix')})")
    pending = [clean({"id": r.get("id"), "step": r.get("step"), "operator": r.get("operator"),
                      "parents": r.get("parents") if isinstance(r.get("parents"), list) else [],
                      "at": number(r.get("at"))}) for r in journal.pending.values()]
    return {
        "row": row,
        "metric": clean(raw.get("metric") or {}),
        "limits": clean(budget.get("limits") or {}), "used": clean(budget.get("used") or {}),
        "clock": clean(budget.get("clock")), "stop_reason": clean(raw.get("stop_reason")),
        "baseline": clean(raw.get("baseline") or {}),
        "nodes": nodes, "pending": pending,
        "curve": curve(nodes, row["direction"] or "higher"),
        "notes": [inert(n) for n in notes],
    }


class Blobs:
    """Texts of one run's blob store, by digest, through the results folder's checks."""

    def __init__(self, catalog: Catalog, folder: RunFolder):
        self.results, self.root = catalog.results, folder.path / "blobs"

    def text(self, digest: Any, cap: int = TEXT_CAP) -> str | None:
        """The blob as inert text, cut at `cap` bytes (saying so); None when the run did not keep it."""
        if not isinstance(digest, str) or not DIGEST.fullmatch(digest):
            return None
        data = self.results.read(self.root / digest[:2] / digest[2:], cap=cap + 1)
        if data is None:
            return None
        more = f"\n... (cut at {cap} bytes)" if len(data) > cap else ""
        return inert(data[:cap].decode(errors="replace") + more)


def _messages(raw: str | None) -> list[dict[str, str]] | None:
    if raw is None:
        return None
    try:
        messages = json.loads(raw)
    except ValueError:
        return [{"role": "?", "content": raw}]
    if not isinstance(messages, list):
        return [{"role": "?", "content": raw}]
    out = []
    for m in messages:
        if isinstance(m, dict):
            content = m.get("content")
            out.append({"role": inert(str(m.get("role", "?"))),
                        "content": inert(content if isinstance(content, str) else json.dumps(content))})
    return out


def _cost(call: dict[str, Any]) -> str:
    if call.get("offline") is True:
        return f"$0 {OFFLINE_LABEL}"
    usd = number(call.get("usd"))
    return (f"${usd:.6g}" if usd is not None else "$?") + (" (cache hit)" if call.get("cached") is True else "")


def node_json(catalog: Catalog, folder: RunFolder, node_id: str) -> dict[str, Any] | None:
    """One node in full, or None when the run has no finished node with that id."""
    journal = catalog.journal(folder)
    node = journal.finished.get(node_id)
    if node is None:
        return None
    blobs = Blobs(catalog, folder)
    calls = []
    for call in node.get("llm_calls") if isinstance(node.get("llm_calls"), list) else []:
        if isinstance(call, dict):
            calls.append({"head": clean({k: call.get(k) for k in ("operator", "purpose", "model", "prompt_tokens",
                                                                  "completion_tokens", "error")}),
                          "cost": _cost(call),
                          "messages": _messages(blobs.text(call.get("messages"), cap=MESSAGES_CAP)),
                          "response": blobs.text(call.get("response"))})
    tools = []
    for tool in node.get("tool_calls") if isinstance(node.get("tool_calls"), list) else []:
        if isinstance(tool, dict):
            shown = {k: v for k, v in tool.items() if k not in ("stdout", "stderr")}
            tools.append({"record": clean(shown), "stdout": blobs.text(tool.get("stdout")),
                          "stderr": blobs.text(tool.get("stderr"))})
    row = node_row(node, journal.checkpoints.get(node_id, {}))
    return {
        **row,
        "texts": {label: inert(str(node.get(key) or "")) for label, key in
                  (("Plan", "plan"), ("Analysis", "analysis"), ("Analysis error", "analysis_error"),
                   ("Feedback", "feedback"), ("Bug", "bug_reason"))},
        "metrics": clean(node.get("metrics") if isinstance(node.get("metrics"), dict) else {}),
        "exit_code": number(node.get("exit_code")), "wall_limit_s": number(node.get("wall_limit_s")),
        "peak_open_files": number(node.get("peak_open_files")),
        "files": sorted(inert(str(k)) for k in (node.get("files") or {})) if isinstance(node.get("files"), dict) else [],
        "diff": blobs.text(node.get("diff")) if node.get("diff") else "",
        "stdout": blobs.text(node.get("stdout")) if node.get("stdout") else "",
        "stderr": blobs.text(node.get("stderr")) if node.get("stderr") else "",
        "transcript": blobs.text(node.get("transcript"), cap=MESSAGES_CAP) if node.get("transcript") else "",
        "llm_calls": calls, "tool_calls": tools,
    }
