"""Run one call of agent code in a forked child that can read only what it was handed.

A driver such as continual_learning's or federated_learning's must keep agent code from seeing data it is
not entitled to at that moment (a later split, another client's shard). Python cannot hide objects
inside one process, so every agent call runs in its own short-lived child process:

1. the driver forks; the parent never loads training data (not even to count it), so the child
   inherits none, not even in freed memory: code in the child can read its own process's memory
   (numpy's as_strided is enough), so what is not there is the only reliable secret;
2. trusted driver code in the child loads exactly the inputs of this call (`load`);
3. `install_guard` adds an audit hook that refuses, for the rest of the child's life, to open or
   list anything under the blocked folders (the data folders, the driver's scratch folder), to
   write, create, rename or delete anything outside the call's own output folder (so no file can
   carry data from one call to a later one), to reopen inherited files such as stdout, to read or
   signal other processes, to start programs, or to use ctypes;
4. the agent's module is imported and called (`work`); the child writes its results to files;
5. the parent reads and validates those files as untrusted input.

What crosses the boundary is checked by `task_runtime.returned`: results are dicts of plain numeric
arrays under a budget of numbers (`as_arrays`, `load_arrays`) and labels (`as_labels`), never pickles.

Audit hooks cannot be removed from Python code. They do not see native code that opens files
without going through Python (a C extension written for the purpose); the guard refuses ctypes and
process start-up so such code cannot be loaded or run from Python, and torch's `from_file` is
disabled. Documented in the task descriptions as the residual risk.
"""

from __future__ import annotations

import gc
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

_DENIED_EVENTS = (
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.call_function", "ctypes.cdata",
    "ctypes.addressof", "ctypes.string_at", "ctypes.wstring_at", "gc.get_referrers", "gc.get_objects",
    "sys._current_frames", "socket.connect", "socket.bind",
)
_READ_EVENTS = ("open", "os.listdir", "os.scandir", "os.chdir")
# Events that change the filesystem: allowed only under the call's own output folder, so no file,
# folder name or timestamp left by one call can carry data to a later one.
_WRITE_EVENTS = ("os.mkdir", "os.rename", "os.link", "os.symlink", "os.truncate", "os.utime", "os.chmod",
                 "os.chown", "os.chflags", "os.lchflags", "os.setxattr", "os.removexattr", "os.remove",
                 "os.rmdir", "os.mkfifo", "os.mknod", "shutil.copyfile", "shutil.copymode", "shutil.copystat",
                 "shutil.copytree", "shutil.move", "shutil.rmtree", "shutil.chown")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
# Reopening an inherited pipe or file (stdout, stderr) through /proc or /dev would let a later call
# read what an earlier one printed.
_FD_PATHS = ("/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/proc/self/fd", "/proc/thread-self/fd")


class IsolationError(Exception):
    """A child failed (the agent's code raised, or broke a rule): one line for the driver to report."""


def _real(raw: str | bytes | os.PathLike) -> str:
    return os.path.realpath(os.fsdecode(raw))


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root + os.sep) for root in roots)


def install_guard(blocked: list[Path], allowed_writes: list[Path] = ()) -> None:
    """From now on this process may not read or list anything under `blocked`, change the filesystem
    anywhere but under `allowed_writes`, reopen inherited files, read other processes' memory, signal
    them, start programs or use ctypes."""
    roots = tuple(os.path.realpath(p) for p in blocked)
    writable = tuple(os.path.realpath(p) for p in allowed_writes)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in _DENIED_EVENTS or event.startswith(("os.exec", "os.spawn", "os.posix_spawn")):
            raise PermissionError(f"isolation: {event} is not allowed in agent code")
        if event == "os.kill" and args and args[0] != os.getpid():
            raise PermissionError("isolation: signalling other processes is not allowed in agent code")
        if event in _WRITE_EVENTS:
            for raw in args[:2]:
                if isinstance(raw, (str, bytes, os.PathLike)) and not _under(_real(raw), writable):
                    raise PermissionError(f"isolation: {event} outside this call's output folder is not allowed")
            return
        if event not in _READ_EVENTS or not args or not isinstance(args[0], (str, bytes, os.PathLike)):
            return
        raw = os.path.abspath(os.fsdecode(args[0]))
        path = _real(args[0])
        if raw.startswith(_FD_PATHS) or path.startswith(_FD_PATHS) or "/fd/" in raw and raw.startswith("/proc/"):
            raise PermissionError("isolation: reopening inherited files is not allowed in agent code")
        if raw.startswith("/proc/") or path.startswith("/proc/"):
            for candidate in (raw, path):
                parts = candidate.split("/")
                if len(parts) > 2 and parts[2].isdigit() and parts[2] != str(os.getpid()):
                    raise PermissionError("isolation: other processes' /proc entries are not readable")
                if candidate.endswith(("/mem", "/maps", "/pagemap", "/environ")):
                    raise PermissionError("isolation: process memory is not readable")
        writes = event == "open" and len(args) > 2 and (any(c in str(args[1] or "") for c in "wax+")
                                                         or bool((args[2] or 0) & _WRITE_FLAGS))
        if writes and not _under(path, writable):
            raise PermissionError("isolation: writing outside this call's output folder is not allowed")
        if _under(path, roots) and not (writes and _under(path, writable)):
            raise PermissionError(f"isolation: {path} is not readable at this point of the protocol")

    sys.addaudithook(hook)
    torch = sys.modules.get("torch")
    if torch is not None:  # native file reads that bypass Python's open()
        def refused(*_: Any, **__: Any) -> None:
            raise PermissionError("isolation: torch.from_file is not allowed in agent code")
        for owner in (torch, getattr(torch, "_C", None) and torch._C._VariableFunctions,
                      getattr(torch, "UntypedStorage", None)):
            if owner is not None and hasattr(owner, "from_file"):
                try:
                    setattr(owner, "from_file", refused)
                except (AttributeError, TypeError):
                    pass

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))


def _harness_frame(filename: str) -> bool:
    """Frames of the driver or of this runtime: a failure is reported at the agent's line, not ours."""
    return os.path.basename(filename) == "driver.py" or os.path.dirname(os.path.abspath(filename)) == _RUNTIME_DIR


def run_isolated(label: str, load: Callable[[], Any], work: Callable[[Any], None], blocked: list[Path],
                 allowed_writes: list[Path] = ()) -> None:
    """Fork; in the child run `load()` (trusted), install the guard, then `work(inputs)`.

    Raises IsolationError with one line when the child fails; `work` reports through files only."""
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()  # the parent's objects stay out of the child's collections: fewer copy-on-write page copies
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        code = 0
        try:
            inputs = load()
            install_guard(blocked, allowed_writes)
            work(inputs)
        except BaseException as exc:  # noqa: BLE001 - everything becomes one line for the parent
            code = 1
            frames = traceback.extract_tb(exc.__traceback__)
            where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames)
                          if not _harness_frame(f.filename)), "")
            message = f"{type(exc).__name__}: {exc}".splitlines()[0][:400] if str(exc) else type(exc).__name__
            try:
                os.write(write_end, f"{message}{f' (at {where})' if where else ''}".encode(errors="replace"))
            except OSError:
                pass
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(write_end)
    chunks = []
    while True:
        chunk = os.read(read_end, 4096)
        if not chunk or sum(map(len, chunks)) > 8192:
            break
        chunks.append(chunk)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return
    detail = b"".join(chunks).decode(errors="replace").strip()
    if not detail:
        detail = (f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                  else f"exit code {os.WEXITSTATUS(status)}")
    raise IsolationError(f"{label}: {detail}")
