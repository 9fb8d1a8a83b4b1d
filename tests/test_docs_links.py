"""Every link in the repository's documentation leads somewhere inside the repository: a relative link
resolves to a file (and its #anchor to a heading there), and none climbs out of the checkout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO

INLINE = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
WEB = ("http://", "https://", "mailto:")


def documents() -> list[Path]:
    found = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").rglob("*.md")),
             *sorted((REPO / "examples").rglob("*.md"))]
    return [path for path in found if path.is_file()]


def links(markdown: str) -> list[str]:
    text = CODE.sub("", markdown)  # a link inside code is an example, not a link
    return INLINE.findall(text) + REFERENCE.findall(text)


def anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", CODE.sub("", markdown), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def problem(doc: Path, target: str) -> str:
    """Why `target`, linked from `doc`, does not lead to a place in the repository ("" when it does)."""
    if target.startswith(WEB):
        return ""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
        return "an absolute path or a non-web scheme points outside the repository"
    path_part, _, anchor = target.partition("#")
    resolved = (doc.parent / path_part).resolve() if path_part else doc
    if not resolved.is_relative_to(REPO.resolve()):
        return "climbs out of the repository"
    if not resolved.exists():
        return "no such file in the repository"
    if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text()):
        return f"no heading #{anchor} in {resolved.relative_to(REPO)}"
    return ""


@pytest.mark.parametrize("doc", documents(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_points_inside_the_repository(doc: Path) -> None:
    broken = [f"{target}: {why}" for target in links(doc.read_text()) if (why := problem(doc, target))]
    assert not broken, f"{doc.relative_to(REPO)}: {broken}"


def test_the_checker_catches_what_it_looks_for(tmp_path: Path) -> None:
    doc = REPO / "docs" / "agents.md"
    assert problem(doc, "../README.md") == "" and problem(doc, "plugins.md") == ""
    assert problem(doc, "../../elsewhere/notes.md") == "climbs out of the repository"
    assert problem(doc, "/srv/docs/x.md") == problem(doc, "file:///etc/passwd") != ""
    assert problem(doc, "nowhere.md") == "no such file in the repository"
    assert problem(REPO / "README.md", "docs/agents.md#no-such-heading").startswith("no heading")
    assert links("see [a](a.md), ![img](b.png \"t\") and `[c](c.md)`\n[d]: d.md\n") == ["a.md", "b.png", "d.md"]
