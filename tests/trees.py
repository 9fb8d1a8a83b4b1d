"""Hand-built node stores for policy tests: nodes with chosen statuses and scores, no experiments."""

from __future__ import annotations

from pathlib import Path

from researchbench.benchmark.records.journal import BUGGY, EDIT_FAILED, OK, BlobStore, Node, NodeStore
from researchbench.benchmark.tasks.manifest import Metric


class Tree:
    """A NodeStore grown by hand; `add` finishes a node, `claim` leaves one in flight."""

    def __init__(self, tmp_path: Path, direction: str = "lower", baseline: float | None = 3.0,
                 tie_breaks: tuple[tuple[str, str], ...] = ()):
        metric = Metric("score", direction, floor=5.0 if direction == "lower" else 0.0,
                        target=0.0 if direction == "lower" else 5.0, rationale="test", tie_breaks=tie_breaks)
        self.store = NodeStore(BlobStore(tmp_path / "blobs"), metric)
        self.step = 0
        self.add("baseline", (), baseline)

    def _node(self, operator: str, parents: tuple[str, ...], hints: dict | None) -> Node:
        node = Node(id=f"{self.step:04d}", step=self.step, operator=operator, parents=list(parents),
                    hints=dict(hints or {}))
        self.step += 1
        return node

    def add(self, operator: str, parents: tuple[str, ...] = ("0000",), score: float | None = 1.0,
            status: str | None = None, hints: dict | None = None, metrics: dict | None = None) -> Node:
        """score None = a buggy run; status EDIT_FAILED = an edit that never ran; metrics: secondary ones."""
        node = self._node(operator, parents, hints)
        node.status = status or (OK if score is not None else BUGGY)
        node.executed = node.status in (OK, BUGGY)
        node.primary = score if node.status == OK else None
        node.metrics = {"score": score, **(metrics or {})} if node.status == OK else {}
        node.bug_reason = "exit 1" if node.status == BUGGY else ""
        self.store.add(node)
        return node

    def claim(self, operator: str, parents: tuple[str, ...], hints: dict | None = None) -> Node:
        node = self._node(operator, parents, hints)
        self.store.claim(node)
        return node

    def failed_edit(self, operator: str, parents: tuple[str, ...]) -> Node:
        return self.add(operator, parents, None, status=EDIT_FAILED)


class ScriptedRng:
    """random() returns the scripted values in order; choice() picks the scripted index."""

    def __init__(self, randoms: list[float], choices: list[int] | None = None):
        self.randoms, self.choices = list(randoms), list(choices or [])

    def random(self) -> float:
        return self.randoms.pop(0)

    def choice(self, seq):
        return seq[self.choices.pop(0)]

    def randrange(self, n: int) -> int:
        return self.choices.pop(0) % n
