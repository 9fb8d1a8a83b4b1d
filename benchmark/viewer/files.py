"""Reading inside the results folder only: every path the viewer opens is checked here first.

Why: a results folder holds runs of hostile agent code, and anyone may have copied or linked things into
it. The viewer reads regular files whose real path (symlinks resolved) lies inside RESULTS, caps how much
of one it reads, and never writes, executes or fetches anything.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from researchbench.benchmark.common.safefs import read_fd

READ_CAP = 64 << 20  # one file read whole (a journal of a long run; blobs are capped lower by their callers)


@dataclass(frozen=True)
class Results:
    """The folder the viewer serves (its real path)."""

    root: Path

    @classmethod
    def open(cls, folder: Path) -> Results:
        return cls(Path(os.path.realpath(folder)))

    def inside(self, path: Path) -> bool:
        """Whether `path`, with every symlink resolved, is RESULTS or lies under it."""
        real = os.path.realpath(path)
        return real == str(self.root) or real.startswith(str(self.root) + os.sep)

    def is_dir(self, path: Path) -> bool:
        return self.inside(path) and os.path.isdir(os.path.realpath(path))

    def stat(self, path: Path) -> os.stat_result | None:
        """The file's stat when it is a regular file inside RESULTS, else None."""
        if not self.inside(path):
            return None
        try:
            st = os.stat(os.path.realpath(path))
        except OSError:
            return None
        return st if stat.S_ISREG(st.st_mode) else None

    def read(self, path: Path, cap: int = READ_CAP, offset: int = 0) -> bytes | None:
        """Up to `cap` bytes of a regular file inside RESULTS from `offset`, or None (absent, a link out, not
        a regular file)."""
        if not self.inside(path):
            return None
        try:
            fd = os.open(os.path.realpath(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            if offset:
                os.lseek(fd, offset, os.SEEK_SET)
            return read_fd(fd, cap)
        finally:
            os.close(fd)

    def relative(self, path: Path) -> str:
        """`path` as a posix path relative to RESULTS ('' for the root itself)."""
        rel = Path(path).relative_to(self.root).as_posix()
        return "" if rel == "." else rel
