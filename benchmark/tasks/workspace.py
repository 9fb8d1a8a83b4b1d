"""Prepared task workspaces (`workspace/<task>/`): data written by the task's prepare command plus a
pristine copy of its baseline code, sealed by a checksum manifest.

Preparing is idempotent and self-checking: the manifest (sha256 of every file, plus the task's name,
version and a digest of its baseline code and prepare script) is written last, and the finished tree
is moved into place with one rename, so an interrupted prepare never looks finished. A run calls
`open_prepared` at start; any missing, changed, added or stale file is a one-line `UserError` that
names `python setup.py --task <name>` as the fix.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.paths import REPO_ROOT, task_runtime_dir
from researchbench.benchmark.tasks.manifest import TaskSpec, render

# The group that may read labels: the evaluator's sandbox user has it, agent jobs never do. Only a
# root harness can set it; otherwise the labels are the harness user's alone (0700).
LABELS_GID = 65533
CHECKSUM_FILE = ".checksums.json"
MANIFEST_FORMAT = 1
BASELINE = "baseline"
_SKIP_DIRS = {"__pycache__", ".pytest_cache"}
_SKIP_SUFFIXES = (".pyc", ".pyo")

Log = Callable[[str], None]


def workspace_root() -> Path:
    """`<repo>/workspace`, or `$RESEARCHBENCH_WORKSPACE` when set (tests and shared installs)."""
    env = os.environ.get("RESEARCHBENCH_WORKSPACE")
    return Path(env).expanduser().resolve() if env else REPO_ROOT / "workspace"


@dataclass(frozen=True)
class PreparedTask:
    spec: TaskSpec
    root: Path  # workspace/<task>
    public_dir: Path  # root / spec.data.public: read-only in val and test phases
    test_inputs_dir: Path  # read-only in the final test phase only
    labels_dir: Path  # read by the evaluator only
    baseline_dir: Path  # pristine copy of the baseline code (root / "baseline")

    def baseline_files(self) -> dict[str, bytes]:
        """Every file of the pristine baseline code, relpath (posix) -> bytes."""
        return {rel: (self.baseline_dir / rel).read_bytes() for rel in _walk(self.baseline_dir)}


def _task_root(spec: TaskSpec, root: Path | None) -> Path:
    return Path(root).resolve() / spec.name if root is not None else workspace_root() / spec.name


def _prepared(spec: TaskSpec, task_root: Path) -> PreparedTask:
    return PreparedTask(spec=spec, root=task_root, public_dir=task_root / spec.data.public,
                        test_inputs_dir=task_root / spec.data.test_inputs, labels_dir=task_root / spec.data.labels,
                        baseline_dir=task_root / BASELINE)


def _display(path: Path) -> str:
    """Repo-relative when inside the repo (`workspace/causality`), else absolute."""
    try:
        return path.relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return str(path)


def _walk(base: Path) -> list[str]:
    """Sorted posix relpaths of the files under base, skipping bytecode caches and the manifest."""
    found = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in filenames:
            if name.endswith(_SKIP_SUFFIXES):
                continue
            rel = Path(dirpath, name).relative_to(base).as_posix()
            if rel != CHECKSUM_FILE:
                found.append(rel)
    return sorted(found)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _hash_tree(base: Path) -> dict[str, str]:
    return {rel: _sha256(base / rel) for rel in _walk(base)}


def _source_digest(spec: TaskSpec) -> str:
    """Digest of what a prepared workspace is built from: the baseline code and any task file the prepare
    command names. Editing either without bumping the version still marks the workspace stale."""
    digest = hashlib.sha256()
    for rel, sha in _hash_tree(spec.code_dir).items():
        digest.update(f"code/{rel}\0{sha}\n".encode())
    for rel, sha in (_hash_tree(spec.code_overlay) if spec.code_overlay else {}).items():
        digest.update(f"overlay/{rel}\0{sha}\n".encode())
    argv = render(spec.prepare, python="python", task_dir=str(spec.task_dir), workspace="WORKSPACE")
    for part in argv:
        path = Path(part)
        if path.is_absolute() and path.is_file() and spec.task_dir in path.resolve().parents:
            digest.update(f"prepare/{path.relative_to(spec.task_dir).as_posix()}\0{_sha256(path)}\n".encode())
    if spec.repo is not None:
        digest.update(f"repo\0{spec.repo.url}\0{spec.repo.commit}\0{spec.repo.subdir}\n".encode())
    for d in spec.downloads:
        digest.update(f"download\0{d.url}\0{d.sha256}\0{d.dest}\n".encode())
    return digest.hexdigest()


def _check_layout(spec: TaskSpec) -> None:
    """The data folders must be distinct plain relative paths inside workspace/<task>."""
    seen = {BASELINE: "the baseline copy"}
    for key in ("public", "test_inputs", "labels"):
        rel = getattr(spec.data, key)
        parts = PurePosixPath(rel).parts
        if not parts or PurePosixPath(rel).is_absolute() or ".." in parts or rel in (".", ""):
            raise UserError(f"{spec.home / 'task.yaml'}: 'data.{key}' must be a relative folder inside the "
                            f"workspace, got {rel!r}; see docs/tasks.md")
        if parts[0] in seen:
            raise UserError(f"{spec.home / 'task.yaml'}: 'data.{key}' ({rel!r}) overlaps {seen[parts[0]]}; "
                            "use distinct top-level folders (see docs/tasks.md)")
        seen[parts[0]] = f"data.{key}"


def _problem(spec: TaskSpec, task_root: Path, verify_files: bool = True) -> tuple[str, str] | None:
    """None when the workspace verifies; else (state, detail) with state in not prepared/stale/corrupted.
    Without `verify_files`, the data files are not hashed (a listing must stay fast on large datasets)."""
    manifest_path = task_root / CHECKSUM_FILE
    if not task_root.is_dir() or not any(task_root.iterdir()):
        return "not prepared", ""
    if not manifest_path.is_file():
        return "corrupted", f"{CHECKSUM_FILE} is missing, so the last prepare did not finish"
    try:
        manifest = json.loads(manifest_path.read_text())
        recorded: dict[str, str] = manifest["files"]
        name, version, source = manifest["task"], manifest["version"], manifest["source"]
    except (ValueError, KeyError, TypeError):
        return "corrupted", f"{CHECKSUM_FILE} is unreadable"
    if name != spec.name:
        return "corrupted", f"it holds task '{name}'"
    if version != spec.version:
        return "stale", f"prepared for task version {version}, the task is now version {spec.version}"
    if source != _source_digest(spec):
        return "stale", "the task's baseline code or prepare script changed since it was prepared"
    if not verify_files:
        return None
    present = set(_walk(task_root))
    for rel in sorted(recorded):
        if rel not in present:
            return "corrupted", f"{rel} is missing"
        if _sha256(task_root / rel) != recorded[rel]:
            return "corrupted", f"{rel} changed"
    added = sorted(present - set(recorded))
    if added:
        return "corrupted", f"{added[0]} was added"
    return None


def _message(spec: TaskSpec, task_root: Path, state: str, detail: str) -> str:
    where = _display(task_root)
    if state == "not prepared":
        return f"{where} is not prepared; run `python setup.py --task {spec.name}`"
    return f"{where} is {state} ({detail}); run `python setup.py --task {spec.name}` to redo it"


def workspace_status(spec: TaskSpec, root: Path | None = None) -> str:
    """'prepared', 'not prepared', or 'corrupted (...)' / 'stale (...)': for listings."""
    problem = _problem(spec, _task_root(spec, root))
    if problem is None:
        return "prepared"
    state, detail = problem
    return f"{state} ({detail})" if detail else state


def prepared_state(spec: TaskSpec, root: Path | None = None) -> str:
    """'prepared', 'not prepared', 'stale' or 'corrupted' from the workspace's checksum file, without hashing
    its data (`list tasks`; a run still verifies every file before it starts)."""
    problem = _problem(spec, _task_root(spec, root), verify_files=False)
    return "prepared" if problem is None else problem[0]


def open_prepared(spec: TaskSpec, root: Path | None = None) -> PreparedTask:
    """The verified workspace of a task; a UserError naming the fix when it is absent, stale or corrupted."""
    task_root = _task_root(spec, root)
    problem = _problem(spec, task_root)
    if problem is not None:
        raise UserError(_message(spec, task_root, *problem))
    prepared = _prepared(spec, task_root)
    secure_labels(prepared.labels_dir)  # workspaces prepared by an older harness, or copied in
    return prepared


def secure_labels(labels_dir: Path) -> None:
    """Labels: owner-only, plus read access for LABELS_GID when the harness is root (so the evaluator,
    running as an unprivileged user with that group, can read them and a job user cannot)."""
    group = LABELS_GID if os.geteuid() == 0 else None
    try:
        for dirpath, _, filenames in os.walk(labels_dir):
            for path, mode in [(dirpath, 0o750), *((os.path.join(dirpath, f), 0o640) for f in filenames)]:
                if os.path.islink(path):
                    continue
                if group is not None:
                    os.chown(path, -1, group)
                os.chmod(path, mode if group is not None else mode & 0o700)
    except OSError as exc:  # e.g. a shared workspace owned by someone else: leave it as it is
        logging.getLogger(__name__).warning("cannot set the permissions of %s: %s", labels_dir, exc)


def _run_prepare_command(spec: TaskSpec, target: Path) -> None:
    argv = render(spec.prepare, python=sys.executable, task_dir=str(spec.task_dir), workspace=str(target))
    # A prepare script may import the task runtime (docs/tasks.md), as the task's driver and evaluator do.
    runtime_parent = os.path.dirname(task_runtime_dir())
    python_path = os.pathsep.join(filter(None, [runtime_parent, os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": python_path}
    try:
        proc = subprocess.run(argv, cwd=spec.task_dir, env=env, capture_output=True, text=True)
    except OSError as exc:
        raise UserError(f"{spec.name}: could not start the prepare command {argv[0]!r} ({exc}); "
                        f"check 'prepare' in {spec.home / 'task.yaml'}") from None
    if proc.returncode != 0:
        lines = [line for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
        last = lines[-1].strip() if lines else "no output"
        raise UserError(f"{spec.name}: the prepare command failed (exit {proc.returncode}): {last}; "
                        f"fix it and run `python setup.py --task {spec.name} --force`")


def _missing_optional(spec: TaskSpec, task_root: Path) -> bool:
    """Whether optional downloads are declared but the (verified) workspace was prepared without them."""
    wanted = {d.dest for d in spec.downloads}
    try:
        placed = set(json.loads((task_root / CHECKSUM_FILE).read_text()).get("downloads", []))
    except (OSError, ValueError, AttributeError):
        return True
    return not wanted <= placed


def prepare(spec: TaskSpec, root: Path | None = None, force: bool = False, log: Log = print,
            downloads: bool = False) -> PreparedTask:
    """Prepare workspace/<task> (under `root`, default `workspace_root()`); a no-op when it verifies.

    Otherwise (absent, corrupted, stale, or force) the tree is rebuilt in a temporary sibling folder: the
    task's downloads are fetched and verified (optional ones only when `downloads`), the prepare command
    writes the data, the baseline code is copied (laid over a checkout of `repo` when the task has one),
    the checksum manifest is written last, and the folder replaces the old one with a rename.
    """
    from researchbench.benchmark.tasks import fetch

    _check_layout(spec)
    task_root = _task_root(spec, root)
    where = _display(task_root)
    cache = task_root.parent / fetch.CACHE_DIR
    if force:
        reason = "forced"
    else:
        problem = _problem(spec, task_root)
        if problem is None and downloads and _missing_optional(spec, task_root):
            problem = ("incomplete", "the optional downloads were not fetched")
        if problem is None:
            log(f"{spec.name}: already prepared at {where} (checksums verified)")
            return _prepared(spec, task_root)
        reason = problem[0] if not problem[1] else f"{problem[0]}: {problem[1]}"
    log(f"{spec.name}: preparing {where} ({reason})")
    started = time.perf_counter()
    parent = task_root.parent
    parent.mkdir(parents=True, exist_ok=True)
    for leftover in parent.glob(f".{spec.name}.preparing-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{spec.name}.preparing-", dir=parent))
    try:
        os.chmod(staging, 0o755)  # mkdtemp makes it 0700; a sandbox user must read public data and code
        placed = fetch.place_downloads(spec, cache, staging, optional=downloads)
        _run_prepare_command(spec, staging)
        for key in ("public", "test_inputs", "labels"):
            folder = staging / getattr(spec.data, key)
            if not folder.is_dir() or not any(folder.iterdir()):
                raise UserError(f"{spec.name}: the prepare command wrote nothing into data.{key} "
                                f"({getattr(spec.data, key)}/); fix {spec.home / 'task.yaml'} or the prepare script")
        secure_labels(staging / spec.data.labels)  # defense in depth: job users cannot read them
        if spec.repo is not None:
            fetch.checkout(spec, cache, staging / BASELINE)
        for code in (spec.code_dir, spec.code_overlay):  # a variant's own baseline files win
            if code is not None:
                shutil.copytree(code, staging / BASELINE, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns(*_SKIP_DIRS, *(f"*{s}" for s in _SKIP_SUFFIXES)))
        files = _hash_tree(staging)
        manifest = {"format": MANIFEST_FORMAT, "task": spec.name, "version": spec.version,
                    "source": _source_digest(spec), "files": files, "downloads": placed}
        tmp = staging / f"{CHECKSUM_FILE}.tmp"
        tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, staging / CHECKSUM_FILE)
        if task_root.exists() or task_root.is_symlink():
            doomed = parent / f".{spec.name}.preparing-old-{os.getpid()}"
            os.replace(task_root, doomed)
            shutil.rmtree(doomed, ignore_errors=True)
        os.replace(staging, task_root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    log(f"{spec.name}: prepared {where} ({len(files)} files, {time.perf_counter() - started:.1f} s)")
    return _prepared(spec, task_root)


def ensure_requirements(spec: TaskSpec, log: Log = print) -> None:
    """pip-install the task's requirements that are missing, do not satisfy their specifier, or differ from
    the version requirements/lock.txt pins (benchmark.tasks.lock: a task's numbers belong to the locked
    environment); nothing when all match. Installs go through the lock as a constraints file, so their
    dependencies are the locked ones too. `no_deps` ones go in a separate `--no-deps` call, after the others."""
    from packaging.requirements import InvalidRequirement, Requirement

    from researchbench.benchmark.tasks.lock import canonical, read_lock

    lock = read_lock()
    pins = lock.pins if lock else {}
    plain: list[str] = []
    no_deps: list[str] = []
    for i, req in enumerate(spec.requirements):
        try:
            parsed = Requirement(req.pip)
        except InvalidRequirement as exc:
            raise UserError(f"{spec.home / 'task.yaml'}: 'requirements[{i}]' is not a pip requirement "
                            f"({exc}); see docs/tasks.md") from None
        if parsed.marker is not None and not parsed.marker.evaluate():
            continue
        try:
            installed = importlib.metadata.version(parsed.name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        locked = pins.get(canonical(parsed.name))
        if locked is not None and parsed.specifier.contains(locked, prereleases=True):
            if installed is None or installed.split("+")[0] != locked.split("+")[0]:
                (no_deps if req.no_deps else plain).append(f"{parsed.name}=={locked}")
        elif installed is None or not parsed.specifier.contains(installed, prereleases=True):
            (no_deps if req.no_deps else plain).append(req.pip)
    if not plain and not no_deps:
        log(f"{spec.name}: requirements satisfied ({len(spec.requirements)} packages)")
        return
    constraints = ["-c", str(lock.path)] if lock else []
    for group, flags in ((plain, []), (no_deps, ["--no-deps"])):
        if not group:
            continue
        argv = [sys.executable, "-m", "pip", "install", *constraints, *flags, *group]
        log(f"{spec.name}: installing {' '.join(flags + group)}" + (" (constrained by the lock)" if lock else ""))
        if subprocess.run(argv).returncode != 0:
            raise UserError(f"{spec.name}: `pip install {' '.join(flags + group)}` failed" + (
                            " (a requirement that conflicts with requirements/lock.txt cannot install beside the "
                            "harness)" if lock else "") + "; install them by hand, then run "
                            f"`python setup.py --task {spec.name} --skip-requirements`")
    importlib.invalidate_caches()
