"""Tree queries the search policies share: debug depth, leaves with pending claims taken into account,
first-parent paths, and Actions as JSON for policy agendas.

A node that did not execute (failed or no-op edit, failed LLM call) spends no experiment and is not
a solution: it never makes its parent a non-leaf and never becomes a parent itself.
"""

from __future__ import annotations

from typing import Any

from researchbench import BASELINE_ID, Action, Node, NodeStore

ROOT = BASELINE_ID  # the baseline node every run starts from: the root of every search tree


def debug_depth(node: Node, store: NodeStore) -> int:
    """AIDE's debug depth: 0 unless the first parent is buggy, else the parent's depth + 1."""
    depth = 0
    while node.parents and store.get(node.parents[0]).is_buggy:
        depth += 1
        node = store.get(node.parents[0])
    return depth


def pending_children(store: NodeStore, node_id: str) -> list[Node]:
    """In-flight nodes (claimed, not finished) working from ``node_id``."""
    return [p for p in store.pending() if node_id in p.parents]


def is_leaf(store: NodeStore, node_id: str) -> bool:
    """No executed child and no claim in flight: nobody has built on this node yet."""
    return not pending_children(store, node_id) and not any(c.executed for c in store.children(node_id))


def path_to_root(node: Node, store: NodeStore) -> list[Node]:
    """The first-parent chain from the root down to ``node`` (inclusive)."""
    path = [node]
    while path[-1].parents:
        path.append(store.get(path[-1].parents[0]))
    return path[::-1]


def ancestors(store: NodeStore, node_id: str) -> set[str]:
    """Every node `node_id` descends from, through all its parents (a crossover has two)."""
    found: set[str] = set()
    stack = list(store.get(node_id).parents)
    while stack:
        current = stack.pop()
        if current not in found:
            found.add(current)
            stack.extend(store.get(current).parents)
    return found


def retry_debug(node: Node, store: NodeStore, max_unrun: int = 2) -> Action | None:
    """Another try at a debug whose edit never ran, so one bad reply does not end a debug chain; at
    most ``max_unrun`` unrun fixes per buggy node, so a model that cannot edit does not loop."""
    if node.executed or node.operator != "debug" or not node.parents:
        return None
    parent = node.parents[0]
    unrun = [c for c in store.children(parent) if c.operator == "debug" and not c.executed]
    if len(unrun) >= max_unrun:
        return None
    return Action("debug", (parent,), dict(node.hints), f"debug_of:{parent}")


def action_to_json(action: Action) -> dict[str, Any]:
    return {"operator": action.operator, "parents": list(action.parents), "hints": dict(action.hints),
            "tag": action.tag}


def action_from_json(raw: dict[str, Any]) -> Action:
    return Action(raw["operator"], tuple(raw["parents"]), dict(raw.get("hints") or {}), raw.get("tag", ""))
