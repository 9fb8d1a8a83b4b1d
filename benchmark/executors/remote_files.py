"""Moving a job's files to and from a remote sandbox as tar streams.

Up: the harness packs host paths it trusts (the node's code dir, small read-only files) into one tar
with absolute names, so the remote side extracts it at `/` and every path equals its host path.
Down (from Modal, and from the local sandbox's capped job filesystem): whatever comes back was
produced next to agent code, so it is parsed as hostile input: only regular files and directories,
only under the paths the harness asked for, no `..`, no links, no devices, a bounded number of
entries, a bounded depth and a bounded total size. Files are written on the host with O_NOFOLLOW
into directories the harness itself created.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Iterable, Mapping, Optional

MAX_DEPTH = 128  # the local executor's limits, so a job is treated alike on every backend
MAX_ENTRIES = 200_000
_CHUNK = 1 << 20  # file data is copied in chunks, never held whole


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


def unpack(source: bytes | BinaryIO, roots: Iterable[Path] | Mapping[str, Path],
           max_bytes: Optional[int] = None, stand_ins: bool = False) -> Unpacked:
    """Write the regular files and dirs of a hostile tar (absolute-less names) under `roots`.

    `roots` lists host dirs whose paths are also the archive's names (Modal), or maps an archive
    prefix to the host dir it lands in (the local executor's relocated dirs). `source` is the whole
    archive or a stream read once. Members outside every root, or with `..`, are ignored; the first
    limit broken (entries, depth, `max_bytes` of file data) stops the unpack and is returned as
    `violation`. A host write error (disk full) is raised: it is the host's failure, not the job's.
    `stand_ins` leaves an inert host stand-in for a symlink (to /dev/null), FIFO or hard link (to a
    file of this archive), so the harness's output checks can name what the job left there.
    """
    if isinstance(roots, Mapping):
        allowed = {PurePosixPath(name): Path(host) for name, host in roots.items()}
    else:
        allowed = {PurePosixPath(str(r).lstrip("/")): Path(r) for r in roots}
    result = Unpacked()
    try:
        if isinstance(source, bytes):
            tar = tarfile.open(fileobj=io.BytesIO(source), mode="r:")
        else:
            tar = tarfile.open(fileobj=source, mode="r|")
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
            top = allowed[root]
            target = top.joinpath(*name.parts[len(root.parts):])
            if _through_link(target, top):
                result.skipped += 1
            elif member.isdir():
                target.mkdir(parents=True, exist_ok=True)
            elif member.isreg():
                if max_bytes is not None and result.bytes + member.size > max_bytes:
                    result.violation = f"stored more than {max_bytes} bytes of files"
                    return result
                source_file = tar.extractfile(member)
                _write_file(target, source_file if source_file is not None else io.BytesIO(), member.mode)
                result.files += 1
                result.bytes += member.size
            else:
                result.skipped += 1
                if stand_ins:
                    _stand_in(member, target, allowed)


def _stand_in(member: tarfile.TarInfo, target: Path, allowed: Mapping[PurePosixPath, Path]) -> None:
    """An inert host entry of the member's kind; never the member's own link target."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        if member.issym():
            os.symlink("/dev/null", target)
        elif member.isfifo():
            os.mkfifo(target, 0o600)
        elif member.islnk():
            name = PurePosixPath(member.linkname.lstrip("/"))
            root = next((a for a in allowed if a in name.parents), None)
            if root is not None and ".." not in name.parts:
                source = allowed[root].joinpath(*name.parts[len(root.parts):])
                if source.is_file() and not source.is_symlink():
                    os.link(source, target, follow_symlinks=False)
    except FileExistsError:
        pass


def _through_link(target: Path, top: Path) -> bool:
    """Whether any existing component from `top` down to `target` is a link on the host."""
    path = target
    while True:
        if path.is_symlink():
            return True
        if path == top or path == path.parent:
            return False
        path = path.parent


def _write_file(path: Path, data: BinaryIO, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags, 0o644 | (mode & 0o111))
    except OSError:
        return  # a directory or link already there: the local copy stays as the harness made it
    with os.fdopen(fd, "wb") as f:
        shutil.copyfileobj(data, f, _CHUNK)
