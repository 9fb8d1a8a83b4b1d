"""Moving a job's files to and from a remote sandbox as tar streams.

Up: the harness packs host paths it trusts (the node's code dir, small read-only files) into one tar
with absolute names, so the remote side extracts it at `/` and every path equals its host path.
Down: whatever comes back was produced next to agent code, so it is parsed as hostile input: only
regular files and directories, only under the paths the harness asked for, no `..`, no links, no
devices, a bounded number of entries, a bounded depth and a bounded total size. Files are written
on the host with O_NOFOLLOW into directories the harness itself created.
"""

from __future__ import annotations

import io
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterable

MAX_DEPTH = 128  # the local executor's limits, so a job is treated alike on every backend
MAX_ENTRIES = 200_000


def pack(paths: Iterable[Path]) -> bytes:
    """A tar of host files/dirs (trusted, harness-made) with absolute member names, links kept as links."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in dict.fromkeys(Path(p) for p in paths):
            tar.add(str(path), arcname=str(path).lstrip("/"), recursive=True)
    return buffer.getvalue()


class Oversize(Exception):
    """The stream went over its byte cap; the download is abandoned."""


class CappedBuffer:
    """Collects a byte stream up to `cap` bytes; one byte more raises Oversize."""

    def __init__(self, cap: int) -> None:
        self.cap, self._parts, self.size = cap, [], 0

    def write(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.cap:
            raise Oversize(f"more than {self.cap} bytes")
        self._parts.append(chunk)

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


@dataclass
class Unpacked:
    files: int = 0
    bytes: int = 0
    skipped: int = 0  # links, devices, fifos: never materialized on the host
    violation: str = ""


def unpack(data: bytes, roots: Iterable[Path]) -> Unpacked:
    """Write the regular files and dirs of a hostile tar (absolute-less names) under `roots`.

    Members outside every root, or with `..`, are ignored; the first limit broken stops the unpack
    and is returned as `violation`.
    """
    allowed = [PurePosixPath(str(r).lstrip("/")) for r in roots]
    result = Unpacked()
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:")
    except tarfile.TarError as exc:
        result.violation = f"unreadable output archive ({exc})"
        return result
    entries = 0
    with tar:
        while True:
            try:
                member = tar.next()
            except tarfile.TarError as exc:
                result.violation = f"corrupt output archive ({exc})"
                return result
            if member is None:
                return result
            entries += 1
            if entries > MAX_ENTRIES:
                result.violation = f"made more than {MAX_ENTRIES} files and directories"
                return result
            name = PurePosixPath(member.name.lstrip("/"))
            root = next((a for a in allowed if name == a or a in name.parents), None)
            if ".." in name.parts or root is None:
                result.skipped += 1
                continue
            if len(name.parts) > MAX_DEPTH + len(root.parts):
                result.violation = f"made a directory tree deeper than {MAX_DEPTH} levels"
                return result
            target, top = Path("/") / name, Path("/") / root
            if _through_link(target, top):
                result.skipped += 1
            elif member.isdir():
                target.mkdir(parents=True, exist_ok=True)
            elif member.isreg():
                source = tar.extractfile(member)
                _write_file(target, source.read() if source else b"", member.mode)
                result.files += 1
                result.bytes += member.size
            else:
                result.skipped += 1


def _through_link(target: Path, top: Path) -> bool:
    """Whether any existing component from `top` down to `target` is a link on the host."""
    path = target
    while True:
        if path.is_symlink():
            return True
        if path == top or path == path.parent:
            return False
        path = path.parent


def _write_file(path: Path, data: bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags, 0o644 | (mode & 0o111))
    except OSError:
        return  # a directory or link already there: the local copy stays as the harness made it
    with os.fdopen(fd, "wb") as f:
        f.write(data)
