"""File-system operations on trees that hostile agent code wrote: they never follow a link, never
recurse on the Python stack, never hang on a special file, and never raise into the run.

A job's code and output dirs may hold anything an unprivileged process can make: symlinks to hidden
files, FIFOs, sparse multi-GB files, hard links, 5000-deep or chmod-000 directory trees. The harness
touches them only through these functions.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

log = logging.getLogger(__name__)

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafeOutput(Exception):
    """A declared output cannot be read safely; the message describes the file, never its target."""


def _open_dir(name: str | Path, dir_fd: int | None = None) -> int:
    """Open a directory without following a link; a chmod-000 dir is made searchable first."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        # Only reachable for a non-root harness, which owns everything its jobs wrote.
        os.chmod(name, 0o700, dir_fd=dir_fd)
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def _entries(fd: int) -> list[tuple[str, bool]]:
    """(name, is a real directory) for every entry of an open directory."""
    with os.scandir(fd) as it:
        return [(e.name, e.is_dir(follow_symlinks=False)) for e in it]


def _unlink_all_but_dirs(fd: int) -> str | None:
    """Remove every non-directory in `fd`; return the name of one subdirectory, or None."""
    try:
        os.fchmod(fd, 0o700)  # entries of a read-only dir cannot be unlinked by a non-root owner
    except OSError:
        pass
    subdir = None
    for name, is_dir in _entries(fd):
        if is_dir:
            subdir = subdir or name
            continue
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            pass
    return subdir


def remove_tree(path: Path) -> bool:
    """Delete `path` and everything under it, at any depth; True when it is gone. Never raises.

    Walks down with one open directory at a time (a 5000-deep tree needs neither 5000 file
    descriptors nor 5000 stack frames, and paths longer than PATH_MAX never appear), deleting
    files on the way and each directory once it is empty.
    """
    path = Path(path)
    try:
        if not path.is_dir() or path.is_symlink():
            path.unlink(missing_ok=True)
            return True
        names: list[str] = []  # the chain of directory names below `path`
        fd = _open_dir(path)
        try:
            while True:
                sub = _unlink_all_but_dirs(fd)
                if sub is not None:
                    child = _open_dir(sub, dir_fd=fd)
                    os.close(fd)
                    fd, names = child, names + [sub]
                    continue
                if not names:
                    break
                parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = parent
                os.rmdir(names.pop(), dir_fd=fd)
        finally:
            os.close(fd)
        path.rmdir()
        return True
    except OSError as exc:
        log.warning("could not fully remove %s: %s", path, exc)
        return not path.exists()


def discard_tree(path: Path) -> bool:
    """Move `path` out of the way (always possible within one file system), then remove it.

    Whatever cannot be deleted stays under a hidden `.trash-*` sibling, so the caller can make a
    fresh directory at `path` in any case.
    """
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return True
    trash = path.with_name(f".trash-{path.name}-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(path, trash)
    except OSError as exc:
        log.warning("could not move %s aside: %s", path, exc)
        return remove_tree(path)
    return remove_tree(trash)


@dataclass
class TreeUsage:
    bytes: int = 0  # allocated blocks, so sparse files count for what they really use
    entries: int = 0
    too_deep: bool = False
    unreadable: bool = False  # a directory the harness may not open (chmod 000 under a non-root harness)


def tree_usage(path: Path, max_depth: int = 128) -> TreeUsage:
    """Disk use of a tree a running job is writing; stops descending past `max_depth` (flagged).

    Depth-first with one open directory per level, so it holds at most `max_depth` descriptors;
    entries that vanish mid-walk are skipped.
    """
    usage = TreeUsage()
    try:
        root = _open_dir(path)
    except OSError:
        return usage
    stack: list[tuple[int, list[tuple[str, bool]]]] = []
    try:
        stack.append((root, _entries(root)))
        while stack:
            fd, entries = stack[-1]
            if not entries:
                os.close(stack.pop()[0])
                continue
            name, is_dir = entries.pop()
            usage.entries += 1
            try:
                usage.bytes += os.stat(name, dir_fd=fd, follow_symlinks=False).st_blocks * 512
                if not is_dir:
                    continue
                if len(stack) > max_depth:
                    usage.too_deep = True
                    continue
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except PermissionError:
                usage.unreadable = True  # whatever is inside could not be counted
                continue
            except OSError:
                continue
            try:
                stack.append((child, _entries(child)))
            except OSError:
                os.close(child)
    finally:
        for fd, _ in stack:
            os.close(fd)
    return usage


def read_regular_file(base: Path, rel: str, cap_bytes: int, cap_name: str = "") -> bytes:
    """The bytes of `base/rel` if every component is a real directory, the file is a regular file with
    one link and its apparent size is at most `cap_bytes`; else `UnsafeOutput` saying which rule broke
    (`cap_name`, the setting that sets the cap, is named when the file is too large).
    """
    parts = [p for p in rel.split("/") if p]
    if not parts or any(p in (".", "..") for p in parts):
        raise UnsafeOutput(f"{rel} is not a plain relative path")
    try:
        fd = os.open(base, _DIR_FLAGS)
    except OSError:
        raise UnsafeOutput("the output directory is missing or was replaced") from None
    try:
        for i, part in enumerate(parts[:-1]):
            where = "/".join(parts[: i + 1])
            try:
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                raise UnsafeOutput(f"{rel} was not written") from None
            if not stat.S_ISDIR(st.st_mode):
                raise UnsafeOutput(f"{where} is {_kind(st.st_mode)}, not a directory")
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        return _read_leaf(fd, parts[-1], rel, cap_bytes, cap_name)
    finally:
        os.close(fd)


def read_fd(fd: int, cap: int) -> bytes:
    """At most `cap` bytes from an open file descriptor, read in 1 MiB chunks (the caller closes it)."""
    chunks, left = [], cap
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_leaf(dir_fd: int, name: str, rel: str, cap_bytes: int, cap_name: str) -> bytes:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise UnsafeOutput(f"{rel} was not written") from None
    _check_regular(st, rel, cap_bytes, cap_name)
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeOutput(f"{rel} is a symbolic link; write a regular file") from None
        raise UnsafeOutput(f"{rel} cannot be opened ({os.strerror(exc.errno or 0)})") from None
    try:
        _check_regular(os.fstat(fd), rel, cap_bytes, cap_name)  # the same checks on what was really opened
        data = read_fd(fd, cap_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > cap_bytes:
        raise UnsafeOutput(f"{rel} is larger than the {_size(cap_bytes)} limit")
    return data


def _check_regular(st: os.stat_result, rel: str, cap_bytes: int, cap_name: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        hint = "; write a regular file" if stat.S_ISLNK(st.st_mode) else ""
        raise UnsafeOutput(f"{rel} is {_kind(st.st_mode)}, not a regular file{hint}")
    if st.st_nlink != 1:
        raise UnsafeOutput(f"{rel} is a hard link ({st.st_nlink} names); write a fresh file")
    if st.st_size > cap_bytes:
        setting = f" ({cap_name})" if cap_name else ""
        raise UnsafeOutput(f"{rel} is {_size(st.st_size)}, over the {_size(cap_bytes)} limit{setting}")


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def _size(n: int) -> str:
    return f"{n / 1024 ** 2:.1f} MB" if n >= 1024 ** 2 else f"{n} bytes"


def safe_relpath(rel: str) -> PurePosixPath | None:
    """A journal relpath that stays inside the export dir (recorded paths are untrusted input)."""
    path = PurePosixPath(rel)
    if not rel or path.is_absolute() or any(part in ("..", "") for part in path.parts) or "\0" in rel:
        return None
    return path


def write_text_atomic(path: Path, text: str) -> None:
    """Replace the harness's own file `path` in one step (a reader or a crash never sees half of it),
    keeping the mode of the file it replaces."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
