"""A short, factual preview of a task's public data for prompts (AIDE's data_preview idea).

The harness makes it from the files in the task's public data dir, so an agent sees shapes, columns,
dtypes and a few rows without spending an experiment on exploration. It is cached per process, keyed
by every public file's path, size and mtime, so a run builds it once and a changed file rebuilds it.
"""

from __future__ import annotations

import json
import math
import re
import threading
from pathlib import Path

MAX_FILES = 20  # files described in full; the rest are listed by name and size
ROWS = 3  # sample rows per table
MAX_COLUMNS_SHOWN = 40  # in the dtype list; wider tables are summarised
MAX_CHARS_PER_FILE = 2500
MIN_GROUP = 36  # numbered columns (p0, p1, ...) at least this many are one group (an image): fewer stay columns

_cache: dict[tuple, str] = {}
_cache_lock = threading.Lock()


def fingerprint(public_dir: Path) -> tuple:
    """What the preview depends on: every file's relative path, size and mtime."""
    files = sorted(p for p in Path(public_dir).rglob("*") if p.is_file())
    return tuple((p.relative_to(public_dir).as_posix(), p.stat().st_size, p.stat().st_mtime_ns) for p in files)


def preview(public_dir: Path | None) -> str:
    """The preview of every public file, or "" when there is no public data."""
    if public_dir is None or not Path(public_dir).is_dir():
        return ""
    key = (str(public_dir), fingerprint(public_dir))
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    text = _build(Path(public_dir), [Path(public_dir) / rel for rel, _, _ in key[1]])
    with _cache_lock:
        _cache[key] = text
    return text


def _build(root: Path, files: list[Path]) -> str:
    parts = []
    for path in files[:MAX_FILES]:
        rel = path.relative_to(root).as_posix()
        try:
            body = _describe(path)
        except Exception as exc:  # a preview must never stop a run: say why this file has none
            body = f"(no preview: {type(exc).__name__}: {exc})"
        if len(body) > MAX_CHARS_PER_FILE:
            body = body[:MAX_CHARS_PER_FILE].rsplit("\n", 1)[0] + "\n[... preview cut ...]"
        parts.append(f"-> {rel} ({_size(path.stat().st_size)})\n{body}".rstrip())
    rest = files[MAX_FILES:]
    if rest:
        parts.append(f"... and {len(rest)} more files: "
                     + ", ".join(p.relative_to(root).as_posix() for p in rest[:30]))
    return "\n\n".join(parts)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _describe(path: Path) -> str:
    suffix = "".join(path.suffixes[-2:]) if path.name.endswith(".gz") else path.suffix
    suffix = suffix.lower()
    if suffix in (".csv", ".tsv", ".csv.gz", ".tsv.gz", ".parquet", ".feather"):
        return _table(path, suffix)
    if suffix in (".npy", ".npz"):
        return _numpy(path)
    if suffix == ".json":
        return _json(json.loads(path.read_text()))
    if suffix == ".jsonl":
        lines = path.read_text().splitlines()
        return f"{len(lines)} lines; first record: {_json(json.loads(lines[0])) if lines else '(empty)'}"
    if suffix in (".txt", ".md"):
        lines = path.read_text(errors="replace").splitlines()
        return f"{len(lines)} lines; first lines:\n" + "\n".join(line[:200] for line in lines[:5])
    return "(binary or unknown format)"


def _table(path: Path, suffix: str) -> str:
    import pandas as pd

    if "parquet" in suffix:
        frame = pd.read_parquet(path)
    elif "feather" in suffix:
        frame = pd.read_feather(path)
    else:
        frame = pd.read_csv(path, sep="\t" if "tsv" in suffix else ",")
    lines = [f"{frame.shape[0]} rows x {frame.shape[1]} columns"]
    groups = _numbered_groups([str(c) for c in frame.columns])
    if groups:  # pixels or features as one entry each, and the first row's image as a grid
        return "\n".join(lines + _grouped(frame, groups))
    columns = []
    for name in frame.columns[:MAX_COLUMNS_SHOWN]:
        column = frame[name]
        desc = f"{name} ({column.dtype}"
        if column.dtype.kind in "if" and column.notna().any():
            desc += f", {column.min():.4g}..{column.max():.4g}"
        elif column.dtype.kind == "O":
            desc += f", {column.nunique()} distinct"
        missing = int(column.isna().sum())
        columns.append(desc + (f", {missing} missing)" if missing else ")"))
    lines.append("columns: " + "; ".join(columns))
    if frame.shape[1] > MAX_COLUMNS_SHOWN:
        lines.append(f"... and {frame.shape[1] - MAX_COLUMNS_SHOWN} more columns")
    with pd.option_context("display.width", 10_000, "display.max_columns", MAX_COLUMNS_SHOWN):
        lines.append(f"first {ROWS} rows:\n{frame.head(ROWS).to_string(index=False)}")
    return "\n".join(lines)


def _numbered_groups(names: list[str]) -> dict[str, list[str]]:
    """Runs of columns named <prefix>0, <prefix>1, ... (at least MIN_GROUP), by prefix."""
    found: dict[str, list[str]] = {}
    for name in names:
        match = re.fullmatch(r"(.*?\D)(\d+)", name)
        if match and int(match.group(2)) == len(found.get(match.group(1), [])):
            found.setdefault(match.group(1), []).append(name)
    return {prefix: cols for prefix, cols in found.items() if len(cols) >= MIN_GROUP}


def _grouped(frame, groups: dict[str, list[str]]) -> list[str]:
    grouped = {name for cols in groups.values() for name in cols}
    entries = []
    for name in frame.columns:
        if name in grouped and name not in (cols[0] for cols in groups.values()):
            continue
        cols = next((c for c in groups.values() if c[0] == name), None)
        column = frame[cols] if cols else frame[name]
        if cols:
            side = math.isqrt(len(cols))
            shape = f", a {side}x{side} image, row by row" if side * side == len(cols) else ""
            values = column.to_numpy()
            entries.append(f"{cols[0]}..{cols[-1]} ({len(cols)} columns{shape}; {values.dtype}, "
                           f"{values.min():.4g}..{values.max():.4g})")
        else:
            kind = f", {column.min():.4g}..{column.max():.4g}" if column.dtype.kind in "if" and column.notna().any() else ""
            entries.append(f"{name} ({column.dtype}{kind})")
    lines = ["columns: " + "; ".join(entries)]
    others = [c for c in frame.columns if c not in grouped]
    if others:
        lines.append(f"first {ROWS} rows of the other columns:\n{frame[others].head(ROWS).to_string(index=False)}")
    for prefix, cols in groups.items():
        side = math.isqrt(len(cols))
        row = frame[cols].iloc[0].to_numpy()
        if side * side == len(cols) and side <= 32:
            grid = "\n".join(" ".join(f"{v:5.3g}" for v in row[r * side:(r + 1) * side]) for r in range(side))
            lines.append(f"first row's {cols[0]}..{cols[-1]} as the {side}x{side} image:\n{grid}")
        else:
            lines.append(f"first row's {cols[0]}..{cols[-1]}: " + " ".join(f"{v:.3g}" for v in row[:24])
                         + (" ..." if len(cols) > 24 else ""))
    return lines


def _numpy(path: Path) -> str:
    import numpy as np

    loaded = np.load(path, allow_pickle=False)
    arrays = dict(loaded.items()) if hasattr(loaded, "files") else {"array": loaded}
    return "\n".join(f"{name}: shape {a.shape}, dtype {a.dtype}" for name, a in arrays.items())


def _json(value: object, depth: int = 0) -> str:
    """The shape of a JSON value: keys and types, lists by length and first element."""
    if depth > 2:
        return type(value).__name__
    if isinstance(value, dict):
        items = list(value.items())[:15]
        inner = ", ".join(f"{k}: {_json(v, depth + 1)}" for k, v in items)
        return "{" + inner + (", ..." if len(value) > 15 else "") + "}"
    if isinstance(value, list):
        return f"list[{len(value)}] of {_json(value[0], depth + 1)}" if value else "[]"
    return repr(value)[:40] if depth == 0 else type(value).__name__
