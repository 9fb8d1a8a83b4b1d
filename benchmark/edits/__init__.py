"""Edit formats: turn an LLM reply into new file contents, or into feedback the LLM can act on.

Two formats, both common in the field:
- ``search_replace``: ``path`` then ``<<<<<<< SEARCH / ======= / >>>>>>> REPLACE`` blocks, many per
  file and many files per reply, applied in order. Small edits to large files stay cheap.
- ``whole_file``: ``### FILE: path`` followed by one fenced block holding the whole new file.

An edit is all-or-nothing: if any block fails (no match, ambiguous match, forbidden path, Python
that no longer compiles) nothing is applied, and ``feedback`` names every failing block and why. A
reply that edits nothing, or whose edits leave every file identical, is ``ok=True, changed=False``:
the engine records it as a no-op that spends no experiment.

Its own room (rank 1 in docs/architecture.md): agents apply edits, the engine and the scorer diff with
`unified_diff`, and `researchbench` re-exports `apply_edits` and `format_instructions`. Standard library only.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

FORMATS = ("search_replace", "whole_file", "auto")

SEARCH_RE = re.compile(r"^\s*<{5,9} ?SEARCH\s*$")
DIVIDER_RE = re.compile(r"^\s*={5,9}\s*$")
REPLACE_RE = re.compile(r"^\s*>{5,9} ?REPLACE\s*$")
FILE_HEADER_RE = re.compile(r"^\s*#{1,6}\s*FILE:\s*(?P<path>.+?)\s*$", re.IGNORECASE)
FENCE_RE = re.compile(r"^\s{0,3}(?P<run>`{3,}|~{3,})\s*(?P<info>[^`\s]*)\s*$")
PATH_RE = re.compile(r"^[\w.\-/\\]+$")
MAX_CLOSEST_WINDOWS = 5000  # keep the closest-lines search cheap on very large files


@dataclass
class EditResult:
    """Outcome of applying one reply.

    ``files`` holds the full new contents of every file the edit changed (or created); it is empty
    when ``ok`` is False, because a failed edit applies nothing. ``feedback`` is for the LLM and is
    empty when the edit applied and changed something.
    """

    files: dict[str, str] = field(default_factory=dict)
    ok: bool = True
    changed: bool = False
    feedback: str = ""
    errors: list[str] = field(default_factory=list)


@dataclass
class _Block:
    number: int  # 1-based, in reply order, for feedback
    raw_path: str
    search: list[str]
    replace: list[str]


# -- paths ---------------------------------------------------------------------------------------


def normalize_path(raw: str) -> tuple[Optional[str], str]:
    """A clean relative POSIX path, or (None, why): no absolute paths, no escaping with ``..``."""
    path = raw.strip().strip("`*'\"").strip().replace("\\", "/")
    if not path:
        return None, "empty file path"
    if path.startswith("/") or re.match(r"^[A-Za-z]:/", path):
        return None, f"{raw.strip()}: absolute paths are not allowed; use a path relative to the task folder"
    if ".." in path.split("/"):
        return None, f"{raw.strip()}: paths may not contain '..'"
    path = posixpath.normpath(path)
    if path in (".", ""):
        return None, f"{raw.strip()}: not a file path"
    return path, ""


def _path_candidate(line: str, known: frozenset[str]) -> Optional[str]:
    """The file path a line announces (``path``, ```` `path` ````, ``**path**``, ``# path:``), else None.

    A bare word such as ``Changes:`` is not taken for a path unless a file of that name exists.
    """
    text = line.strip()
    text = re.sub(r"^#+\s*", "", text)
    text = re.sub(r"^(file|path)\s*:\s*", "", text, flags=re.IGNORECASE)
    text = text.strip().strip("*`").rstrip(":").strip().strip("*`")
    if not text or not PATH_RE.match(text):
        return None
    return text if ("." in text or "/" in text or text in known) else None


# -- parsing -------------------------------------------------------------------------------------


def _detect(lines: list[str]) -> Optional[str]:
    """The format the reply used: whichever marker comes first, or None when there is none."""
    for line in lines:
        if SEARCH_RE.match(line):
            return "search_replace"
        if FILE_HEADER_RE.match(line):
            return "whole_file"
    return None


def _parse_search_replace(lines: list[str], known: frozenset[str]) -> tuple[list[_Block], list[str]]:
    """Blocks in reply order; a block without a path line of its own reuses the previous path."""
    blocks: list[_Block] = []
    errors: list[str] = []
    last_path: Optional[str] = None
    prev_end = 0
    i = 0
    while i < len(lines):
        if REPLACE_RE.match(lines[i]):  # every block consumes its own marker, so this one is stray
            errors.append(f"line {i + 1}: '>>>>>>> REPLACE' without a '<<<<<<< SEARCH' before it")
        if not SEARCH_RE.match(lines[i]):
            i += 1
            continue
        number = len(blocks) + 1
        path = _path_before(lines, prev_end, i, known) or last_path
        divider = _index_matching(lines, i + 1, DIVIDER_RE, stop=SEARCH_RE)
        end = _index_matching(lines, (divider or i) + 1, REPLACE_RE, stop=SEARCH_RE) if divider else None
        if path is None:
            errors.append(f"block {number}: no file path on the line before '<<<<<<< SEARCH'")
        if divider is None or end is None:
            missing = "=======" if divider is None else ">>>>>>> REPLACE"
            errors.append(f"block {number} ({path or '?'}): missing '{missing}' line (was the reply cut off?)")
            i += 1
            continue
        if path is not None:
            blocks.append(_Block(number, path, lines[i + 1 : divider], lines[divider + 1 : end]))
            last_path = path
        prev_end = end + 1
        i = end + 1
    return blocks, errors


def _path_before(lines: list[str], start: int, search_at: int, known: frozenset[str]) -> Optional[str]:
    """Scan back from a SEARCH marker over blank and fence lines to the path line, if any."""
    for j in range(search_at - 1, start - 1, -1):
        text = lines[j].strip()
        if not text or FENCE_RE.match(lines[j]):
            continue
        return _path_candidate(lines[j], known)
    return None


def _index_matching(lines: list[str], start: int, pattern: re.Pattern[str], stop: re.Pattern[str]) -> Optional[int]:
    for j in range(start, len(lines)):
        if pattern.match(lines[j]):
            return j
        if stop.match(lines[j]):
            return None
    return None


def _parse_whole_file(lines: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """``### FILE: path`` + one fenced block each; returns (raw path, content) in reply order."""
    files: list[tuple[str, str]] = []
    errors: list[str] = []
    i = 0
    while i < len(lines):
        header = FILE_HEADER_RE.match(lines[i])
        if not header:
            i += 1
            continue
        raw_path = header.group("path")
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        opener = FENCE_RE.match(lines[j]) if j < len(lines) else None
        if opener is None:
            errors.append(f"{raw_path}: '### FILE:' must be followed by a fenced code block with the whole file")
            i += 1
            continue
        close = _closing_fence(lines, j + 1, opener.group("run"))
        if close is None:
            errors.append(f"{raw_path}: the code block is never closed (was the reply cut off?)")
            break
        body = lines[j + 1 : close]
        files.append((raw_path, "\n".join(body) + "\n" if body else ""))
        i = close + 1
    return files, errors


def _closing_fence(lines: list[str], start: int, run: str) -> Optional[int]:
    """The line closing a fence opened with ``run``.

    A closer is a bare fence of the same character at least as long as the opener (CommonMark). An
    inner fence that carries an info string (```` ```python ````) opens a nested block whose bare
    closer is skipped, so a Markdown file or docstring with its own fenced examples survives.
    """
    char, length, depth = run[0], len(run), 0
    for j in range(start, len(lines)):
        fence = FENCE_RE.match(lines[j])
        if not fence or fence.group("run")[0] != char or len(fence.group("run")) < length:
            continue
        if fence.group("info"):
            depth += 1
        elif depth:
            depth -= 1
        else:
            return j
    return None


# -- matching ------------------------------------------------------------------------------------


def _find_exact(lines: list[str], search: list[str]) -> list[int]:
    n = len(search)
    return [i for i in range(len(lines) - n + 1) if lines[i : i + n] == search]


def _find_tolerant(lines: list[str], search: list[str]) -> list[int]:
    """Matches that differ only in leading/trailing whitespace on each line."""
    key = [s.strip() for s in search]
    stripped = [line.strip() for line in lines]
    n = len(key)
    return [i for i in range(len(lines) - n + 1) if stripped[i : i + n] == key]


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _reindent(replace: list[str], file_chunk: list[str], search: list[str]) -> list[str]:
    """Shift REPLACE by the indentation the LLM dropped or added relative to the file."""
    pairs = [(f, s) for f, s in zip(file_chunk, search) if s.strip()]
    if not pairs:
        return replace
    file_indent, search_indent = _indent(pairs[0][0]), _indent(pairs[0][1])
    if file_indent.endswith(search_indent) and len(file_indent) > len(search_indent):
        extra = file_indent[: len(file_indent) - len(search_indent)]
        return [extra + r if r.strip() else r for r in replace]
    if search_indent.endswith(file_indent) and len(search_indent) > len(file_indent):
        surplus = search_indent[: len(search_indent) - len(file_indent)]
        return [r[len(surplus) :] if r.startswith(surplus) else r for r in replace]
    return replace


def _trim_blank_edges(search: list[str], replace: list[str]) -> tuple[list[str], list[str]]:
    """Drop blank lines at the edges of SEARCH (and as many at the edges of REPLACE)."""
    s, r = list(search), list(replace)
    while s and not s[0].strip():
        s.pop(0)
        if r and not r[0].strip():
            r.pop(0)
    while s and not s[-1].strip():
        s.pop()
        if r and not r[-1].strip():
            r.pop()
    return s, r


def _closest(lines: list[str], search: list[str]) -> tuple[int, list[str]]:
    """The window of the file most similar to SEARCH (start index, lines), for feedback."""
    n = max(1, len(search))
    target = "\n".join(s.strip() for s in search)
    best, best_at = -1.0, 0
    starts = range(max(1, len(lines) - n + 1))
    step = max(1, len(starts) // MAX_CLOSEST_WINDOWS)
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(target)
    for i in starts[::step]:
        matcher.set_seq1("\n".join(line.strip() for line in lines[i : i + n]))
        if matcher.real_quick_ratio() <= best or matcher.quick_ratio() <= best:
            continue
        ratio = matcher.ratio()
        if ratio > best:
            best, best_at = ratio, i
    return best_at, lines[best_at : best_at + n]


def _apply_block(content: str, block: _Block, path: str) -> tuple[Optional[str], str]:
    """New content, or (None, error text) naming the block and, on a miss, the closest lines."""
    lines = content.split("\n")
    search, replace = block.search, block.replace
    where: list[int] = []
    for candidate_search, candidate_replace in ((search, replace), _trim_blank_edges(search, replace)):
        if not candidate_search:
            continue
        where = _find_exact(lines, candidate_search)
        if where:
            search, replace = candidate_search, candidate_replace
            break
        where = _find_tolerant(lines, candidate_search)
        if where:
            search = candidate_search
            replace = _reindent(candidate_replace, lines[where[0] : where[0] + len(search)], search)
            break
    label = f"block {block.number} ({path})"
    if len(where) > 1:
        at = ", ".join(str(i + 1) for i in where[:6])
        return None, (
            f"{label}: SEARCH matches {len(where)} places (lines {at}); "
            "include more surrounding lines so it matches exactly one"
        )
    if not where:
        start, window = _closest(lines, search)
        shown = "\n".join(window)
        return None, (
            f"{label}: SEARCH does not match the file. SEARCH must copy whole existing lines exactly, never part of a line. "
            f"The closest lines in {path} (lines {start + 1}-{start + len(window)}) are:\n```\n{shown}\n```"
        )
    i = where[0]
    return "\n".join(lines[:i] + replace + lines[i + len(search) :]), ""


# -- applying ------------------------------------------------------------------------------------


def _editable_list(current: dict[str, str], is_editable: Callable[[str], bool]) -> str:
    names = sorted(p for p in current if is_editable(p))
    return ", ".join(names) if names else "(none)"


def _check_path(raw: str, current: dict[str, str], is_editable: Callable[[str], bool]) -> tuple[Optional[str], str]:
    path, why = normalize_path(raw)
    if path is None:
        return None, why
    if not is_editable(path):
        return None, f"{path}: not an editable file; you may edit only: {_editable_list(current, is_editable)}"
    return path, ""


def _apply_search_replace(
    blocks: list[_Block], work: dict[str, Optional[str]], current: dict[str, str], is_editable: Callable[[str], bool]
) -> list[str]:
    errors: list[str] = []
    for block in blocks:
        path, why = _check_path(block.raw_path, current, is_editable)
        if path is None:
            errors.append(f"block {block.number}: {why}")
            continue
        content = work.get(path)
        if not any(s.strip() for s in block.search):
            if content is None:
                work[path] = "\n".join(block.replace) + "\n" if block.replace else ""
            else:  # empty SEARCH on an existing file appends, the usual convention
                sep = "" if not content or content.endswith("\n") else "\n"
                work[path] = content + sep + "\n".join(block.replace) + "\n"
            continue
        if content is None:
            errors.append(
                f"block {block.number} ({path}): file does not exist; to create it, leave SEARCH empty"
            )
            continue
        new, why = _apply_block(content, block, path)
        if new is None:
            errors.append(why)
        else:
            work[path] = new
    return errors


def _apply_whole_files(
    files: list[tuple[str, str]], work: dict[str, Optional[str]], current: dict[str, str], is_editable: Callable[[str], bool]
) -> list[str]:
    errors: list[str] = []
    for raw_path, content in files:
        path, why = _check_path(raw_path, current, is_editable)
        if path is None:
            errors.append(why)
            continue
        original = work.get(path)
        same_but_final_newline = original is not None and original.rstrip("\n") == content.rstrip("\n")
        work[path] = original if same_but_final_newline else content
    return errors


def _syntax_errors(changed: dict[str, str]) -> list[str]:
    """Python files must still compile; other files are not parsed."""
    errors = []
    for path, src in sorted(changed.items()):
        if not path.endswith(".py"):
            continue
        try:
            compile(src, path, "exec")
        except SyntaxError as exc:
            text = (exc.text or "").rstrip("\n")
            errors.append(f"{path}:{exc.lineno}: SyntaxError: {exc.msg}" + (f"\n    {text.strip()}" if text else ""))
        except ValueError as exc:  # e.g. source with NUL bytes
            errors.append(f"{path}: cannot compile: {exc}")
    return errors


def _failure(errors: list[str]) -> EditResult:
    listed = "\n".join(f"- {e}" for e in errors)
    feedback = (
        f"Your edit was NOT applied ({len(errors)} problem{'s' if len(errors) != 1 else ''}); no file changed:\n"
        f"{listed}\nFix these and send the complete set of edits again."
    )
    return EditResult(files={}, ok=False, changed=False, feedback=feedback, errors=errors)


def apply_edits(
    response: str, current: dict[str, str], is_editable: Callable[[str], bool], fmt: str = "auto"
) -> EditResult:
    """Parse ``response`` in ``fmt`` and apply it to ``current`` (path -> contents), all or nothing."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown edit format {fmt!r}; expected one of {FORMATS}")
    lines = response.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    used = _detect(lines) if fmt == "auto" else fmt
    originals = {p: c.replace("\r\n", "\n") for p, c in current.items()}
    work: dict[str, Optional[str]] = dict(originals)
    if used == "search_replace":
        blocks, errors = _parse_search_replace(lines, frozenset(current))
        errors += _apply_search_replace(blocks, work, current, is_editable)
        found = bool(blocks) or bool(errors)
    elif used == "whole_file":
        files, errors = _parse_whole_file(lines)
        errors += _apply_whole_files(files, work, current, is_editable)
        found = bool(files) or bool(errors)
    else:
        errors, found = [], False
    changed = {p: c for p, c in work.items() if c is not None and c != originals.get(p)}
    errors += _syntax_errors(changed) if not errors else []
    if errors:
        return _failure(errors)
    if not found:
        expected = "SEARCH/REPLACE blocks or '### FILE:' sections" if fmt == "auto" else fmt.replace("_", "/")
        return EditResult(ok=True, changed=False, feedback=f"Your reply contained no edits (expected {expected}).")
    if not changed:
        return EditResult(
            ok=True, changed=False, feedback="Your edits left every file exactly as it was; nothing changed."
        )
    return EditResult(files={p: _restore_newlines(c, current.get(p)) for p, c in changed.items()}, changed=True)


def _restore_newlines(content: str, original: Optional[str]) -> str:
    """Keep a CRLF file CRLF: matching happens on LF text, the result goes back as it came."""
    return content.replace("\n", "\r\n") if original is not None and "\r\n" in original else content


# -- prompts and diffs ---------------------------------------------------------------------------

_SEARCH_REPLACE_HELP = """\
Edit files with SEARCH/REPLACE blocks. Each block is: the file path alone on a line, then

<<<<<<< SEARCH
lines copied exactly from the current file
=======
the lines that replace them
>>>>>>> REPLACE

Rules:
- SEARCH must copy whole existing lines (never part of a line) character for character, including
  indentation and comments, and must match exactly one place in the file: add neighbouring lines if it
  could match twice. A file written on one line (as JSON often is) is changed by replacing that whole line.
- Keep blocks small: quote only the lines that change plus a little context. Use several blocks
  for several changes; they are applied in order, so a later block sees earlier results.
- Put the path line before every block. To create a new file, leave SEARCH empty.
- To delete lines, leave REPLACE empty.
- Only edit the editable files you were given. If any block fails, none is applied.
"""

_WHOLE_FILE_HELP = """\
Return every file you change in full. For each file write a header line and one fenced block:

### FILE: path/to/file.py
```python
the complete new contents of the file
```

Rules:
- Give the entire file, not a fragment: whatever you leave out is deleted.
- If the file itself contains a line of three backticks, open and close the block with four.
- List only files you change, and only editable ones. Python files must compile.
"""


def format_instructions(fmt: str) -> str:
    """The prompt text that teaches the LLM the edit format ``fmt``."""
    if fmt == "search_replace":
        return _SEARCH_REPLACE_HELP
    if fmt == "whole_file":
        return _WHOLE_FILE_HELP
    if fmt == "auto":
        return (
            "Prefer SEARCH/REPLACE blocks for focused changes:\n\n" + _SEARCH_REPLACE_HELP
            + "\nFor a rewrite of most of a file, you may instead send whole files:\n\n" + _WHOLE_FILE_HELP
            + "\nUse one of the two formats per reply, not both."
        )
    raise ValueError(f"unknown edit format {fmt!r}; expected one of {FORMATS}")


def unified_diff(before: dict[str, str], after: dict[str, str]) -> str:
    """A git-style unified diff over whole snapshots; a path absent from ``after`` shows as deleted."""
    chunks: list[str] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        diff = difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            (new or "").splitlines(keepends=True),
            fromfile=f"a/{path}" if old is not None else "/dev/null",
            tofile=f"b/{path}" if new is not None else "/dev/null",
        )
        for line in diff:
            chunks.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(chunks)
