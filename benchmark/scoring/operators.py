"""Per-operator statistics (success, edit failures, debug chains) and cost per improvement, per run."""

from __future__ import annotations

from collections import Counter
from typing import Any

from researchbench.benchmark.records.journal import AGENT_FAILED, BUGGY, EDIT_FAILED, NO_OP, OK
from researchbench.benchmark.scoring.normalize import NAN
from researchbench.benchmark.records.journal import BASELINE_ID
from researchbench.benchmark.scoring.runs import RunRecord, is_ok


def operator_counts(run: RunRecord) -> list[dict[str, Any]]:
    """One row per operator the run used: attempts and outcome counts (the baseline is not an operator)."""
    rows: dict[str, Counter] = {}
    for node in run.nodes:
        if node.id == BASELINE_ID:
            continue
        c = rows.setdefault(node.operator, Counter())
        c["attempts"] += 1
        c["executed"] += bool(node.executed)
        c["ok"] += is_ok(node)
        c["buggy"] += node.status == BUGGY
        c["edit_failed"] += node.status == EDIT_FAILED
        c["no_op"] += node.status == NO_OP
        c["agent_failed"] += node.status == AGENT_FAILED
    return [{"operator": op, **{k: c[k] for k in ("attempts", "executed", "ok", "buggy", "edit_failed", "no_op",
                                                     "agent_failed")}} for op, c in sorted(rows.items())]


def debug_chains(run: RunRecord) -> tuple[int, int]:
    """(chains, fixed): a chain starts at a buggy node some debug step targeted (itself not a debug of a
    buggy node) and is fixed when any node reached from it through debug steps scored."""
    by_id = {n.id: n for n in run.nodes}
    children: dict[str, list] = {}
    for node in run.nodes:
        if node.operator == "debug" and node.parents:
            children.setdefault(node.parents[0], []).append(node)

    def is_debug_of_buggy(node) -> bool:
        parent = by_id.get(node.parents[0]) if node.parents else None
        return node.operator == "debug" and parent is not None and parent.status == BUGGY

    chains = fixed = 0
    for node in run.nodes:
        if node.status != BUGGY or node.id not in children or is_debug_of_buggy(node):
            continue
        chains += 1
        todo, seen = list(children[node.id]), set()
        while todo:
            child = todo.pop()
            if child.id in seen:
                continue
            seen.add(child.id)
            if child.status == OK:
                fixed += 1
                break
            todo.extend(children.get(child.id, []))
    return chains, fixed


def improvements(run: RunRecord) -> int:
    """How many val steps set a new best (strictly better than the baseline and every earlier step)."""
    best = run.score("baseline", "val")
    count = 0
    for node in run.experiments:
        if is_ok(node) and (best is None or run.metric.better(node.primary, best)):
            best, count = node.primary, count + 1
    return count


def cost_per_improvement(run: RunRecord) -> dict[str, float]:
    used = run.summary.budget.used
    usd, tokens = ((used.usd or 0.0), float(used.tokens or 0)) if used else (0.0, 0.0)
    n = improvements(run)
    return {"improvements": n,
            "usd_per_improvement": usd / n if n else NAN,
            "tokens_per_improvement": tokens / n if n else NAN}
