"""Text shaping for prompts: tails cut at line boundaries (tracebacks kept whole), summaries cut at
sentence ends, an outline of a Python file, and a section assembler that keeps a prompt under a
character budget by shortening the least important sections first.

Why: an LLM reads a cut-off traceback or half a plan as noise, and prompts that grow with every step
crowd out what matters. Every cut here says it is a cut.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

TRACEBACK = "Traceback (most recent call last):"


def tail_lines(text: str, limit: int) -> str:
    """The end of ``text`` in at most ~``limit`` chars, cut at a line boundary.

    The last Python traceback is kept whole when it fits; when it does not, its header, the error
    lines, the innermost frame and as many frames of the agent's own code as fit are kept (library
    frames after those), and every gap is marked as cut.
    """
    text = text.rstrip("\n")
    if len(text) <= limit:
        return text
    at = text.rfind(TRACEBACK)
    if at >= 0 and len(text) - at > limit:
        return _cut_traceback(text[at:], limit, earlier=text[:at].count("\n"))
    lines = text.split("\n")
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        if size + len(line) + 1 > limit and kept:
            break
        kept.append(line if len(line) <= limit else line[:limit] + " [... line cut ...]")
        size += len(line) + 1
    cut = len(lines) - len(kept)
    return f"[... {cut} earlier lines cut ...]\n" + "\n".join(reversed(kept))


def head_lines(text: str, limit: int) -> str:
    """The start of ``text`` in at most ``limit`` chars, cut at a line boundary and marked."""
    if len(text) <= limit:
        return text
    head = text[:limit].rsplit("\n", 1)[0]
    return f"{head}\n[... {text.count(chr(10)) - head.count(chr(10))} more lines cut ...]"


_WARNING = re.compile(r"\b\w*Warning\b")


def fold_repeats(text: str) -> str:
    """A warning that a library printed again (once per worker or per call) is kept at its first place only,
    with the source line Python prints under it, and a note counts the repeats: eight copies of one
    warning filled an output tail that should have shown the run's own lines."""
    seen: set[str] = set()
    kept: list[str] = []
    dropped, skip_source = 0, False
    for line in text.split("\n"):
        if skip_source and line.startswith((" ", "\t")):
            skip_source = False
            continue
        skip_source = False
        if _WARNING.search(line):
            if line in seen:
                dropped, skip_source = dropped + 1, True
                continue
            seen.add(line)
        kept.append(line)
    if dropped:
        kept.append(f"[{dropped} repeats of warnings shown above were removed]")
    return "\n".join(kept)


def head_and_tail(text: str, limit: int, head_share: float = 0.25) -> str:
    """``text`` in about ``limit`` chars, cut from the middle at line boundaries: the start (what the run
    set up and printed first) and the end (its result or traceback, kept by `tail_lines`) both survive,
    and the gap is marked with how many lines were cut."""
    text = text.rstrip("\n")
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    head: list[str] = []
    size = 0
    for line in lines:
        if size + len(line) + 1 > limit * head_share:
            break
        head.append(line)
        size += len(line) + 1
    rest = "\n".join(lines[len(head):])
    tail = tail_lines(rest, limit - size)
    if not head:
        return tail
    marker = re.match(r"\[\.\.\. (\d+) (earlier lines|lines of earlier output) cut \.\.\.\]\n", tail)
    if marker:  # the tail's own marker counts the lines between head and tail
        tail = tail[marker.end():]
        return "\n".join(head) + f"\n[... {marker.group(1)} lines cut from the middle ...]\n" + tail
    return "\n".join(head) + "\n" + tail


def _cut_traceback(tb: str, limit: int, earlier: int) -> str:
    lines = tb.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith('  File "')]
    if not starts:
        return "[... cut ...]\n" + "\n".join(lines[-20:])[-limit:]
    body_end = starts[-1] + 1
    while body_end < len(lines) and lines[body_end].startswith("    "):
        body_end += 1
    error = lines[body_end:]  # the exception line(s), kept whole
    frames = [lines[s:e] for s, e in zip(starts, starts[1:] + [body_end])]
    # keep the innermost frame and the frames in the agent's own code first: library internals are
    # where an error surfaces, the agent's frames are where it is fixed
    order = [len(frames) - 1] + [i for i in range(len(frames) - 2, -1, -1) if not is_library_frame(frames[i][0])]
    order += [i for i in range(len(frames) - 2, -1, -1) if i not in order]
    size = sum(len(line) + 1 for line in error) + len(TRACEBACK)
    chosen: set[int] = set()
    for i in order:
        frame_size = sum(len(line) + 1 for line in frames[i])
        if chosen and size + frame_size > limit:
            continue
        chosen.add(i)
        size += frame_size
    out = [f"[... {earlier} lines of earlier output cut ...]"] if earlier else []
    out.append(lines[0])
    previous = -1
    for i in sorted(chosen):
        if i > previous + 1:
            out.append(f"  [... {i - previous - 1} frames cut ...]")
        out += frames[i]
        previous = i
    return "\n".join(out + error)


def is_library_frame(frame_header: str) -> bool:
    return any(part in frame_header for part in ("site-packages", "dist-packages", "/lib/python", "<frozen"))


def summarize(text: str, limit: int) -> str:
    """``text`` on one line, cut after the last whole sentence that fits (never mid-idea when a
    sentence ends in time; otherwise at a word boundary, marked with '...')."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[:limit]
    ends = [m.end() for m in re.finditer(r"[.!?;](?=\s)", head)]
    if ends and ends[-1] >= limit // 3:
        return head[:ends[-1]] + " [...]"
    return head.rsplit(" ", 1)[0] + " ..."


def middle(text: str, limit: int) -> str:
    """``text`` on one line in about ``limit`` chars, cut from the middle: the opening and the closing
    sentences both survive (an analysis ends with its conclusion, the next step to try)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    half = max(limit // 2 - 12, 1)
    head = flat[:half].rsplit(" ", 1)[0]
    tail = flat[-half:]
    starts = [m.end() for m in re.finditer(r"[.!?;]\s+", tail)]
    tail = tail[starts[0]:] if starts and starts[0] <= half * 2 // 3 else tail.split(" ", 1)[-1]
    return f"{head} [...] {tail}"


def outline_python(source: str) -> str:
    """The contract of a Python file in brief: its docstring and its top-level signatures with the
    first line of each docstring. Used to remind the LLM of a harness file it has already seen."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "\n".join(source.splitlines()[:15])
    out = []
    doc = ast.get_docstring(tree)
    if doc:
        out.append('"""' + doc.strip() + '"""')
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            line = source.splitlines()[node.lineno - 1].strip()
            first = (ast.get_docstring(node) or "").strip().split("\n")[0]
            out.append(line + (f"  # {first}" if first else ""))
    return "\n".join(out)


def diff_stats(diff: str) -> str:
    """'+12 -3 lines in model.py, params.json' for a unified diff."""
    added = sum(1 for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff.splitlines() if line.startswith("-") and not line.startswith("---"))
    files = [line[6:] for line in diff.splitlines() if line.startswith("+++ b/")]
    return f"+{added} -{removed} lines in {', '.join(files)}" if files else "no change"


@dataclass
class Section:
    """One prompt section. ``variants`` run from the full text to ever shorter ones; an empty last
    variant means the section may be dropped. Lower ``priority`` is shortened first."""

    title: str
    variants: list[str]
    priority: int
    level: int = field(default=0, init=False)

    @property
    def text(self) -> str:
        return self.variants[self.level]

    def render(self) -> str:
        return f"# {self.title}\n{self.text.rstrip()}\n" if self.text.strip() else ""


def assemble(sections: list[Section], budget: int) -> str:
    """Join the sections in order, shortening the least important ones until the whole fits ``budget``
    characters. Sections that cannot shrink further are left whole: the budget is a target, and the
    task and the files being edited are never cut."""
    def size() -> int:
        return sum(len(s.render()) + 1 for s in sections)

    while size() > budget:
        shrinkable = [s for s in sections if s.level + 1 < len(s.variants)]
        if not shrinkable:
            break
        victim = min(shrinkable, key=lambda s: s.priority)
        victim.level += 1
    return "\n".join(s.render() for s in sections if s.render())
