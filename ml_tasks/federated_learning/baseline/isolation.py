"""Harness-owned: run one call of agent code in a forked child that can read only what it was handed.

The continual-learning and federated-learning drivers must keep agent code from seeing data it is
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

What crosses the boundary is checked here too: results are dicts of plain numeric arrays under a
budget of numbers (`as_arrays`, `load_arrays`) and labels (`as_labels`), never pickles.

Audit hooks cannot be removed from Python code. They do not see native code that opens files
without going through Python (a C extension written for the purpose); the guard refuses ctypes and
process start-up so such code cannot be loaded or run from Python, and torch's `from_file` is
disabled. Documented in the task descriptions as the residual risk.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import random
import re
import sys
import traceback
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

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


class DriverError(Exception):
    """A problem with the inputs or with what the agent's code returned: the driver reports it as one line."""


def read_params(path: Path) -> dict:
    try:
        params = json.loads(path.read_text())
    except FileNotFoundError:
        raise DriverError(f"{path.name} is missing; it must hold a JSON object of hyper-parameters") from None
    except json.JSONDecodeError as exc:
        raise DriverError(f"{path.name} is not valid JSON: {exc}") from None
    if not isinstance(params, dict):
        raise DriverError(f"{path.name} must hold a JSON object, got {type(params).__name__}")
    return params


def pick_device() -> str:
    """CUDA when a GPU is visible to this job, else CPU (decided in the child: the parent never touches CUDA)."""
    if not os.environ.get("CUDA_VISIBLE_DEVICES", "").strip():
        return "cpu"
    try:
        import torch
        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def as_arrays(raw: Any, budget: int, where: str) -> dict[str, np.ndarray]:
    """A dict of plain numeric arrays (tensors are converted) holding at most `budget` numbers in total."""
    if not isinstance(raw, dict):
        raise DriverError(f"{where} must return a dict of arrays, got {type(raw).__name__}")
    state: dict[str, np.ndarray] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z0-9_]{1,64}", key):
            raise DriverError(f"{where}: keys must be 1-64 letters, digits or '_', got {key!r}"[:200])
        if hasattr(value, "detach"):
            value = value.detach().cpu().numpy()
        array = np.asarray(value)
        if array.dtype.kind not in "biuf":
            raise DriverError(f"{where}: [{key!r}] must be numeric, got dtype {array.dtype}")
        state[key] = array
    total = sum(a.size for a in state.values())
    if total > budget:
        raise DriverError(f"{where}: returned {total} numbers; the budget is {budget}")
    return state


def load_arrays(path: Path, budget: int, where: str) -> dict[str, np.ndarray]:
    """Read arrays a child wrote: untrusted, so sizes are checked before anything is loaded."""
    cap = budget * 8 + (1 << 20)  # bytes: float64 at most, plus npz overhead
    if path.is_symlink() or not path.is_file() or path.stat().st_size > cap:
        raise DriverError(f"{where}: its result file is missing or too large")
    try:
        with zipfile.ZipFile(path) as archive:
            if sum(i.file_size for i in archive.infolist()) > cap:
                raise DriverError(f"{where}: returned more than {budget} numbers")
        with np.load(path, allow_pickle=False) as data:
            raw = {k: data[k] for k in data.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise DriverError(f"{where}: its result file is unreadable ({type(exc).__name__})") from None
    return as_arrays(raw, budget, where)


def as_labels(raw: Any, n: int, where: str, n_classes: int = 10) -> np.ndarray:
    """One class in 0..9 per input row; class scores of shape (n, 10) are reduced by argmax."""
    if hasattr(raw, "detach"):
        raw = raw.detach().cpu().numpy()
    try:
        values = np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DriverError(f"{where} must return numbers ({exc})") from None
    if values.shape == (n, n_classes):
        if not np.isfinite(values).all():
            raise DriverError(f"{where} returned non-finite class scores")
        return values.argmax(axis=1).astype(np.int64)
    if values.shape != (n,):
        raise DriverError(f"{where} returned shape {values.shape}; expected ({n},) labels or ({n}, {n_classes}) scores")
    if not np.isfinite(values).all() or not np.array_equal(values, np.round(values)) or values.min() < 0 \
            or values.max() >= n_classes:
        raise DriverError(f"{where} must return integer labels in 0..{n_classes - 1}")
    return values.astype(np.int64)


def read_npz(path: Path, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise DriverError(f"expected data file {path} does not exist")
    with np.load(path, allow_pickle=False) as data:
        missing = [k for k in keys if k not in data.files]
        if missing:
            raise DriverError(f"{path.name} lacks arrays {missing}")
        return {k: data[k] for k in keys}


def load_labels(path: Path, n: int, where: str, n_classes: int = 10) -> np.ndarray:
    """Read the labels a child saved with np.save: untrusted, size-checked first."""
    if path.is_symlink() or not path.is_file() or path.stat().st_size > 16 * n + 4096:
        raise DriverError(f"{where}: its labels file is missing or too large")
    try:
        raw = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DriverError(f"{where}: its labels file is unreadable ({type(exc).__name__})") from None
    return as_labels(raw, n, where, n_classes)


# Same bits on every x86-64 machine: torch and MKL pick their kernels by the CPU (AVX2 or AVX-512,
# vendor) and the thread count, and a different kernel rounds differently. Read when torch loads.
PORTABLE_X86 = {"ATEN_CPU_CAPABILITY": "default",  # torch's portable kernels
                "MKL_CBWR": "COMPATIBLE,STRICT",  # MKL's conditional numerical reproducibility, any x86-64
                "ONEDNN_MAX_CPU_ISA": "SSE41"}  # should agent code turn oneDNN back on
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}


def warm_up_torch() -> None:
    """Pin torch's numerics (PORTABLE_X86, one thread, no oneDNN or NNPACK convolutions: theirs differ
    by CPU), then import torch and run one tiny optimizer step in the parent, so each forked child
    starts with torch's lazily loaded machinery (about 2 s of CPU on first use) already in memory. The
    tensors are too small to start a thread pool and CUDA is never touched, so forking afterwards is
    safe."""
    os.environ.update(ONE_THREAD)
    if platform.machine().lower() in ("x86_64", "amd64"):
        os.environ.update(PORTABLE_X86)
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)
    torch.backends.mkldnn.enabled = False
    torch.backends.nnpack.enabled = False
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
