"""Harness-owned: run one call of agent code in a forked child that can read only what it was handed.

The continual-learning and federated-learning drivers must keep agent code from seeing data it is
not entitled to at that moment (a later split, another client's shard). Python cannot hide objects
inside one process, so every agent call runs in its own short-lived child process:

1. the driver forks; the parent holds no training data, so the child inherits none;
2. trusted driver code in the child loads exactly the inputs of this call (`load`);
3. `install_guard` adds an audit hook that refuses, for the rest of the child's life, to open or
   list anything under the blocked folders (the data folders, the driver's scratch folder), to read
   another process's memory, to start programs, or to use ctypes;
4. the agent's module is imported and called (`work`); the child writes its results to files;
5. the parent reads and validates those files as untrusted input.

Audit hooks cannot be removed from Python code. They do not see native code that opens files
without going through Python (a C extension written for the purpose); the guard refuses ctypes and
process start-up so such code cannot be loaded or run from Python, and torch's `from_file` is
disabled. Documented in the task descriptions as the residual risk.
"""

from __future__ import annotations

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
_PATH_EVENTS = ("open", "os.listdir", "os.scandir", "os.chdir", "os.link", "os.symlink", "os.rename",
                "shutil.copyfile", "shutil.copytree")


class IsolationError(Exception):
    """A child failed (the agent's code raised, or broke a rule): one line for the driver to report."""


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root + os.sep) for root in roots)


def install_guard(blocked: list[Path], allowed_writes: list[Path] = ()) -> None:
    """From now on this process may not read, list or link anything under `blocked` (except writing
    under `allowed_writes`), read process memory, start programs or use ctypes."""
    roots = tuple(os.path.realpath(p) for p in blocked)
    writable = tuple(os.path.realpath(p) for p in allowed_writes)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in _DENIED_EVENTS or event.startswith(("os.exec", "os.spawn", "os.posix_spawn")):
            raise PermissionError(f"isolation: {event} is not allowed in agent code")
        if event not in _PATH_EVENTS or not args:
            return
        for raw in args[:2]:
            if not isinstance(raw, (str, bytes, os.PathLike)):
                continue
            path = os.path.realpath(os.fsdecode(raw))
            if path.startswith("/proc/") and not path.startswith("/proc/self/") and path != "/proc/self":
                if path.split("/")[2].isdigit() and path.split("/")[2] != str(os.getpid()):
                    raise PermissionError("isolation: other processes' /proc entries are not readable")
            if path.startswith("/proc/") and path.endswith(("/mem", "/maps", "/pagemap")):
                raise PermissionError("isolation: process memory is not readable")
            if _under(path, roots):
                writes = event == "open" and (any(c in str(args[1] or "") for c in "wax")
                                              or bool((args[2] or 0) & (os.O_WRONLY | os.O_CREAT)))
                if not (writes and _under(path, writable)):
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


def warm_up_torch() -> None:
    """Import torch and run one tiny optimizer step in the parent, so each forked child starts with
    torch's lazily loaded machinery (about 2 s of CPU on first use) already in memory. The tensors are
    too small to start a thread pool and CUDA is never touched, so forking afterwards is safe."""
    try:
        import torch
    except ImportError:
        return
    layer = torch.nn.Linear(2, 2)
    for optimizer in (torch.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9), torch.optim.Adam(layer.parameters())):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(layer(torch.ones(1, 2)), torch.zeros(1, dtype=torch.long)).backward()
        optimizer.step()


def run_isolated(label: str, load: Callable[[], Any], work: Callable[[Any], None], blocked: list[Path],
                 allowed_writes: list[Path] = ()) -> None:
    """Fork; in the child run `load()` (trusted), install the guard, then `work(inputs)`.

    Raises IsolationError with one line when the child fails; `work` reports through files only."""
    sys.stdout.flush()
    sys.stderr.flush()
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
                          if Path(f.filename).name not in ("isolation.py", "driver.py")), "")
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
