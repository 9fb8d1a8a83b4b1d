"""Run one call of agent code in a forked child that can read only what it was handed.

A driver such as continual_learning's or federated_learning's must keep agent code from seeing data it is
not entitled to at that moment (a later split, another client's shard). Python cannot hide objects
inside one process, so every agent call runs in its own short-lived child process:

1. the driver forks; the parent never loads training data (not even to count it), so the child
   inherits none, not even in freed memory: code in the child can read its own process's memory
   (numpy's as_strided is enough), so what is not there is the only reliable secret;
2. trusted driver code in the child loads exactly the inputs of this call (`load`), with stdio of its own
   (relayed by the parent) and no inherited file, folder or pipe;
3. the child is sealed by the kernel (`researchbench.task_runtime.confine`): Landlock lets it read everything but the
   blocked folders (the data folders, the driver's scratch folder with the other calls' results),
   write only under the call's own output folder and execute nothing, however a path is spelled (a
   dir fd, `fchdir`, a link); a seccomp filter refuses new processes, IPC, keyrings, metadata
   changes (timestamps, xattrs) and signals to others. A kernel without Landlock refuses the call;
4. `install_guard` then adds an audit hook with the same rules in Python's terms, for readable errors;
   it is not the boundary (it checks path strings, and `dir_fd` or `_posixsubprocess` pass it);
5. the agent's module is imported and called (`work`); the child writes its results to files;
6. the parent reads and validates those files as untrusted input.

What crosses the boundary is checked by `researchbench.task_runtime.returned`: results are dicts of plain numeric
arrays under a budget of numbers (`as_arrays`, `load_arrays`) and labels (`as_labels`), never pickles.
Residual risk: the kernel itself, and timing.
"""

from __future__ import annotations

import gc
import os
import selectors
import stat
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

from . import confine

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
                # its own /proc/self/maps (which libraries are loaded, no data) stays readable: threadpoolctl,
                # and so scikit-learn's KMeans and others, read it to find the BLAS in use
                if candidate.endswith(("/mem", "/pagemap", "/environ")):
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


def _close_inherited(keep: tuple[int, ...]) -> None:
    """Close what the child inherited beyond stdio and `keep`: a file or folder the parent had open stays
    readable through its descriptor whatever Landlock says (rules apply when a path is opened), and an
    inherited pipe could carry another call's bytes. Kernel objects a library owns (eventfd, epoll) stay."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd < 3 or fd in keep:
            continue
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            try:
                os.close(fd)
            except OSError:
                pass


def _own_stdio(out_w: int, err_w: int) -> None:
    """Give the child a fresh stdin (/dev/null) and stdout/stderr pipes of its own that the parent relays:
    reopening an inherited stdout (/proc/self/fd/1) would otherwise read what earlier calls printed."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    os.close(out_w)
    os.close(err_w)


def _relay(child_out: int, child_err: int, report: int) -> bytes:
    """Copy the child's output to ours until it ends; return (at most 8 KiB of) its one-line report."""
    targets = {child_out: sys.stdout.fileno(), child_err: sys.stderr.fileno(), report: -1}
    chunks: list[bytes] = []
    with selectors.DefaultSelector() as selector:
        for fd in targets:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            for key, _ in selector.select():
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fd)
                    os.close(key.fd)
                elif targets[key.fd] < 0:
                    if sum(map(len, chunks)) <= 8192:
                        chunks.append(chunk)
                else:
                    view = memoryview(chunk)
                    while view:
                        try:
                            view = view[os.write(targets[key.fd], view):]
                        except OSError:
                            break  # our own output is gone: keep draining so the child never blocks
    return b"".join(chunks)


def run_isolated(label: str, load: Callable[[], Any], work: Callable[[Any], None], blocked: list[Path],
                 allowed_writes: list[Path] = ()) -> None:
    """Fork; in the child run `load()` (trusted), seal it (`confine`: Landlock and seccomp, then the audit
    hook), then `work(inputs)`.

    Raises IsolationError with one line when the child fails or this kernel cannot confine it (then nothing
    runs); `work` reports through files only."""
    why = confine.unavailable()
    if why:
        raise IsolationError(f"{label}: {why}")
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()  # the parent's objects stay out of the child's collections: fewer copy-on-write page copies
    read_end, write_end = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        for fd in (read_end, out_r, err_r):
            os.close(fd)
        code = 0
        try:
            _own_stdio(out_w, err_w)
            _close_inherited((write_end,))
            inputs = load()
            confine.confine(blocked, allowed_writes)
            install_guard(blocked, allowed_writes)
            # A sealed child cannot make the semaphores joblib's process pools need (/dev/shm is not among its
            # writes): joblib would warn so on import in every child, a dozen lines in each run's output.
            os.environ.setdefault("JOBLIB_MULTIPROCESSING", "0")
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
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    for fd in (write_end, out_w, err_w):
        os.close(fd)
    report = _relay(out_r, err_r, read_end)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return
    detail = report.decode(errors="replace").strip()
    if not detail:
        detail = (f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                  else f"exit code {os.WEXITSTATUS(status)}")
    raise IsolationError(f"{label}: {detail}")
