"""Capped capture of a job's output stream: the head and the tail are kept, the middle dropped.

The head shows what the program set out to do and the tail is where the traceback is; a runaway
print loop in between must cost neither harness memory nor disk. The head goes to the file as it
arrives; the tail lives in a bounded in-memory ring until the stream ends. A full disk never raises:
what could not be written is counted and said in a closing line, and the job's result stands.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)


class CappedWriter:
    """Writes at most `cap` bytes to `path` (caps below the ~110-byte marker keep head + marker)."""

    def __init__(self, path: Path, cap: int) -> None:
        self.cap = max(0, int(cap))
        self.total = 0
        self.truncated = False
        self._head_left = self.cap // 2
        self._tail = bytearray()
        self._tail_cap = self.cap - self._head_left
        self.lost = 0  # bytes that could not be written (disk full)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "wb", buffering=0)  # unbuffered: a full disk shows at the write that hit it

    def _put(self, data: bytes | memoryview) -> None:
        try:
            self._file.write(data)
        except OSError as exc:
            if not self.lost:
                log.warning("cannot write job output to %s: %s", self._file.name, exc)
            self.lost += len(data)

    def write(self, data: bytes) -> None:
        self.total += len(data)
        view = memoryview(data)
        if self._head_left:
            head = view[: self._head_left]
            self._put(head)
            self._head_left -= len(head)
            view = view[len(head) :]
        if len(view):
            self._tail += view
            excess = len(self._tail) - self._tail_cap
            if excess > 0:
                del self._tail[:excess]  # O(1) from the front of a bytearray in CPython

    def close(self) -> bool:
        """Write the tail (after a one-line marker if bytes were dropped); True if truncated."""
        if self._file.closed:
            return self.truncated
        head_written = self.cap // 2 - self._head_left
        if self.total <= self.cap:
            self._put(self._tail)
        else:
            self.truncated = True
            # Sized with the largest possible count so the file never exceeds the cap.
            room = self.cap - head_written - len(self._marker(self.total))
            tail = bytes(self._tail[-room:]) if room > 0 else b""
            self._put(self._marker(self.total - head_written - len(tail)))
            self._put(tail)
        if self.lost:
            self.truncated = True
            self._put(f"\n[... researchbench: {self.lost} bytes of output lost: disk full ...]\n".encode())
        self._tail = bytearray()
        try:
            self._file.close()
        except OSError:  # the buffered tail could not be flushed: disk full
            self.truncated = True
        return self.truncated

    def _marker(self, dropped: int) -> bytes:
        return (
            f"\n[... researchbench: {dropped} bytes dropped here; output capped at "
            f"{self.cap} bytes, head and tail kept ...]\n"
        ).encode()
