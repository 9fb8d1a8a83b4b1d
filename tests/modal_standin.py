"""A local stand-in for exactly the part of the `modal` client that benchmark/executors/modal/backend.py
calls, so the executor is tested offline up to the client boundary with commands that really run.

A stand-in sandbox is a container made with bubblewrap: its root filesystem is a private host dir
(so uploads, downloads and path equality are real), the "image" is this host's system dirs and
interpreter bound read-only, Volumes are host dirs, `block_network=True` unshares the network, and
every exec runs as root of that container in its own pid namespace. What it cannot show: image
builds, GPUs, Modal's scheduling and billing, and processes surviving their exec (here they die with
it; on Modal the executor's kill step ends them). Its containers share this host's kernel, and so its
job-uid leases (see `host_mounts`). Each call is recorded for the tests to assert on.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from researchbench.benchmark.executors.local.job_uids import default_lock_dir
from researchbench.benchmark.executors.local.sandbox import ETC_FILES, SYSTEM_DIRS, python_dirs


class StandInError(Exception):
    """Raised where the real client would raise (terminated sandbox, injected network failure)."""


@dataclass
class Image:
    layers: list[tuple[str, tuple, dict]] = field(default_factory=list)

    @classmethod
    def debian_slim(cls, python_version: str | None = None) -> "Image":
        return cls([("debian_slim", (), {"python_version": python_version})])

    def pip_install(self, *packages: str, **kwargs: Any) -> "Image":
        return Image(self.layers + [("pip_install", packages, kwargs)])


class _Stream:
    def __init__(self, pipe: Any) -> None:
        self._pipe = pipe

    def __iter__(self) -> Iterator[bytes]:
        while True:
            chunk = os.read(self._pipe.fileno(), 1 << 16)
            if not chunk:
                self._pipe.close()
                return
            yield chunk


class ContainerProcess:
    def __init__(self, popen: subprocess.Popen, timeout: int | None) -> None:
        self._popen = popen
        self.timed_out = False
        self.stdout, self.stderr = _Stream(popen.stdout), _Stream(popen.stderr)
        self._timer = threading.Timer(timeout, self._expire) if timeout else None
        if self._timer:
            self._timer.start()

    def _expire(self) -> None:
        self.timed_out = True
        self.kill()

    def kill(self) -> None:
        try:
            os.killpg(self._popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _code(self, raw: int | None) -> int | None:
        if raw is None:
            return None
        if self._timer:
            self._timer.cancel()
        if self.timed_out:
            return -1  # what Modal's wait()/poll() return on an exec timeout
        if 128 < raw < 128 + signal.NSIG:  # bwrap reports death by signal N as 128+N
            return -(raw - 128)
        return raw

    def poll(self) -> int | None:
        return self._code(self._popen.poll())

    def wait(self) -> int:
        return self._code(self._popen.wait())


class _Filesystem:
    def __init__(self, sandbox: "Sandbox") -> None:
        self._sb = sandbox

    def write_bytes(self, data: bytes, remote_path: str) -> None:
        self._sb._check()
        target = self._sb.root / remote_path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


class Sandbox:
    def __init__(self, modal: "StandInModal", kwargs: dict[str, Any]) -> None:
        self.modal, self.kwargs = modal, kwargs
        self.object_id = f"sb-{uuid.uuid4().hex[:10]}"
        self.tags = dict(kwargs.get("tags") or {})
        self.root = modal.root / "sandboxes" / self.object_id
        (self.root / "tmp").mkdir(parents=True)
        os.chmod(self.root / "tmp", 0o1777)
        for path in python_dirs():  # the image's directories are traversable by any uid
            for parent in reversed(Path(path).parents):
                (self.root / str(parent).lstrip("/")).mkdir(exist_ok=True, mode=0o755)
        self.terminated = False
        self.execs: list[tuple[str, ...]] = []
        self._procs: list[ContainerProcess] = []
        self.filesystem = _Filesystem(self)

    def _check(self) -> None:
        if self.terminated:
            raise StandInError("sandbox was terminated")
        if self.modal.fail_next_exec:
            self.modal.fail_next_exec -= 1
            raise StandInError("Could not connect to the Modal server (injected)")

    def exec(self, *args: str, timeout: int | None = None, workdir: str | None = None,
             env: dict[str, str] | None = None, text: bool = True) -> ContainerProcess:
        self._check()
        assert not text, "the executor reads bytes"
        self.execs.append(tuple(args))
        argv = [self.modal.bwrap, "--bind", str(self.root), "/", "--unshare-pid", "--unshare-ipc",
                "--unshare-uts", "--die-with-parent", "--new-session"]
        if self.kwargs.get("block_network"):
            argv.append("--unshare-net")
        argv += ["--dev", "/dev", "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"]
        argv += self.modal.image_mounts() + self.modal.host_mounts()
        for mount, volume in (self.kwargs.get("volumes") or {}).items():
            argv += ["--ro-bind" if volume.read_only else "--bind", str(volume.dir), mount]
        argv += ["--chdir", workdir or "/", "--", *args]
        popen = subprocess.Popen(argv, env=env or {"PATH": "/usr/local/bin:/usr/bin:/bin"},
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True)
        proc = ContainerProcess(popen, timeout)
        self._procs.append(proc)
        return proc

    def terminate(self) -> None:
        self.terminated = True
        for proc in self._procs:
            proc.kill()


class _Api:
    """One of the client's namespaces (modal.Sandbox, modal.App, modal.Volume), over the shared StandInModal."""

    def __init__(self, modal: "StandInModal") -> None:
        self._modal = modal

    @staticmethod
    def _named(store: dict[str, Any], name: str, create_if_missing: bool, make: Callable[[], Any]) -> Any:
        """`store[name]`, made by `make` first where missing, as Modal's from_name/lookup do; asking for a missing
        one without create_if_missing fails."""
        if name not in store:
            assert create_if_missing
            store[name] = make()
        return store[name]


class _SandboxApi(_Api):

    def create(self, *args: str, **kwargs: Any) -> Sandbox:
        self._modal.creates += 1
        if self._modal.fail_create or self._modal.creates in self._modal.fail_creates_at:
            self._modal.fail_create = max(0, self._modal.fail_create - 1)
            raise StandInError("Could not connect to the Modal server (injected)")
        assert "app" in kwargs, "Sandbox.create outside a Modal container needs an app"
        sandbox = Sandbox(self._modal, {"args": args, **kwargs})
        self._modal.sandboxes.append(sandbox)
        return sandbox

    def list(self, *, app_id: str | None = None, tags: dict[str, str] | None = None) -> Iterator[Sandbox]:
        for sandbox in list(self._modal.sandboxes):
            if not sandbox.terminated and all(sandbox.tags.get(k) == v for k, v in (tags or {}).items()):
                yield sandbox


@dataclass
class App:
    name: str
    app_id: str = field(default_factory=lambda: f"ap-{uuid.uuid4().hex[:10]}")


class _AppApi(_Api):
    def lookup(self, name: str, *, create_if_missing: bool = False) -> App:
        return self._named(self._modal.apps, name, create_if_missing, lambda: App(name))


@dataclass
class _Entry:
    path: str


class Volume:
    def __init__(self, directory: Path, read_only: bool = False) -> None:
        self.dir, self.read_only = directory, read_only
        self.uploads: list[str] = []
        self.deleted = False  # an ephemeral Volume whose context ended (its files are gone)

    def listdir(self, path: str) -> list[_Entry]:
        return [_Entry(p.name) for p in (self.dir / path.lstrip("/")).iterdir()]

    def with_mount_options(self, *, read_only: bool | None = None) -> "Volume":
        view = Volume(self.dir, bool(read_only))
        view.uploads = self.uploads
        return view

    def batch_upload(self) -> "Volume":
        return self

    def __enter__(self) -> "Volume":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def put_directory(self, local: str, remote: str) -> None:
        shutil.copytree(local, self.dir / remote.lstrip("/"))
        self.uploads.append(remote)


class _VolumeApi(_Api):
    def from_name(self, name: str, *, create_if_missing: bool = False) -> Volume:
        def make() -> Volume:
            directory = self._modal.root / "volumes" / name
            directory.mkdir(parents=True)
            return Volume(directory)

        return self._named(self._modal.volumes, name, create_if_missing, make)

    @contextlib.contextmanager
    def ephemeral(self) -> Iterator[Volume]:
        """An anonymous Volume that exists while the context is open, as `modal.Volume.ephemeral()`."""
        directory = self._modal.root / "volumes" / f"ephemeral-{uuid.uuid4().hex[:10]}"
        directory.mkdir(parents=True)
        volume = Volume(directory)
        self._modal.ephemeral.append(volume)
        try:
            yield volume
        finally:
            shutil.rmtree(directory)
            volume.deleted = True


class StandInModal:
    """Pass as `client=` to ModalExecutor; `root` holds the sandboxes' filesystems and the Volumes."""

    def __init__(self, root: Path, bwrap: str) -> None:
        self.root, self.bwrap = Path(root), bwrap
        self.Image = Image
        self.Sandbox, self.App, self.Volume = _SandboxApi(self), _AppApi(self), _VolumeApi(self)
        self.sandboxes: list[Sandbox] = []
        self.apps: dict[str, App] = {}
        self.volumes: dict[str, Volume] = {}
        self.ephemeral: list[Volume] = []  # every Volume.ephemeral() made, in order
        self.fail_create = 0  # the next N Sandbox.create calls raise (a network failure)
        self.fail_creates_at: set[int] = set()  # these Sandbox.create calls (1-based) raise
        self.creates = 0
        self.fail_next_exec = 0

    @staticmethod
    def image_mounts() -> list[str]:
        """This host's system dirs, a few /etc files and the interpreter: the stand-in's image."""
        args: list[str] = []
        bound: list[str] = []
        for path in [*SYSTEM_DIRS, *ETC_FILES, *python_dirs()]:
            if not os.path.exists(path) or any(path == b or path.startswith(b + "/") for b in bound):
                continue
            if os.path.islink(path) and os.path.dirname(path) == "/":
                args += ["--symlink", os.readlink(path), path]
            else:
                args += ["--ro-bind", path, path]
            bound.append(path)
        return args

    @staticmethod
    def host_mounts() -> list[str]:
        """The host's job-uid lease dir, at the path a root harness in the container looks for it.

        A Modal sandbox has a kernel of its own; these containers share this host's. A root harness in
        one leases job uids, and a uid it leases is the same host uid a host harness's job (or another
        container's) may hold: with a lock dir of its own each would lease it, and one job's processes
        would count against the other's RLIMIT_NPROC (a forking test on the host failed a container's
        baseline that way). Sharing the leases makes them each other's neighbours, as on one host."""
        if os.geteuid() != 0:  # only a root harness leases uids
            return []
        lock_dir = default_lock_dir()
        lock_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
        return ["--bind", str(lock_dir), str(lock_dir)]


def working_bwrap() -> str | None:
    """The bubblewrap the stand-in runs its sandboxes with; None on a machine where none works."""
    from researchbench.benchmark.executors.local import sandbox as sandbox_mod

    return next((p for p in sandbox_mod.bwrap_candidates(None) if not sandbox_mod.probe_bwrap(p)), None)


def from_env() -> StandInModal:
    """For `hydra.launcher.client=tests.modal_standin:from_env` in CLI tests (a subprocess):
    the root comes from $RESEARCHBENCH_STANDIN_ROOT."""
    bwrap = working_bwrap()
    assert bwrap is not None, "the stand-in needs a working bubblewrap"
    root = Path(os.environ["RESEARCHBENCH_STANDIN_ROOT"]) / uuid.uuid4().hex[:8]
    return StandInModal(root, bwrap)
