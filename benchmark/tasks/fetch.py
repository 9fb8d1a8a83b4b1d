"""What an external task fetches at prepare time: a git repository at a pinned commit, and checksummed
downloads. Both land in a cache next to the workspaces (`<workspace root>/.cache/`) only once complete
and verified, so a wrong commit, a wrong checksum or a dropped connection is one line and leaves
nothing half-written; `researchbench.benchmark.tasks.workspace.prepare` copies from the cache into its staging folder.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.tasks.manifest import Download, Repo, TaskSpec

CACHE_DIR = ".cache"  # under the workspace root; task names cannot start with a dot
DOWNLOAD_TIMEOUT_S = 60.0
_CHUNK = 1 << 20


def _git(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}
    try:
        return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, timeout=600)
    except FileNotFoundError:
        raise UserError("git is not installed; install it to prepare tasks whose baseline lives in a repository") from None


def _last_line(proc: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in proc.stderr.decode(errors="replace").splitlines() if ln.strip()]
    return lines[-1].strip() if lines else f"exit {proc.returncode}"


def _has_commit(mirror: Path, commit: str) -> bool:
    return _git(["-C", str(mirror), "cat-file", "-e", f"{commit}^{{commit}}"]).returncode == 0


def _mirror(spec: TaskSpec, repo: Repo, cache: Path) -> Path:
    """A bare clone of repo.url in the cache holding repo.commit (cloned or fetched as needed)."""
    root = cache / "git"
    root.mkdir(parents=True, exist_ok=True)
    mirror = root / (hashlib.sha256(repo.url.encode()).hexdigest()[:20] + ".git")
    if not mirror.is_dir():
        staging = Path(tempfile.mkdtemp(prefix=".clone-", dir=root))
        proc = _git(["clone", "--bare", "--quiet", repo.url, str(staging / "r.git")])
        if proc.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise UserError(f"{spec.name}: cannot clone {repo.url} ({_last_line(proc)}); check 'repo.url' in "
                            f"{spec.home / 'task.yaml'}")
        os.replace(staging / "r.git", mirror)
        shutil.rmtree(staging, ignore_errors=True)
    if not _has_commit(mirror, repo.commit):
        _git(["-C", str(mirror), "fetch", "--quiet", repo.url, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"])
    if not _has_commit(mirror, repo.commit):
        raise UserError(f"{spec.name}: commit {repo.commit} is not in {repo.url}; check 'repo.commit' in "
                        f"{spec.home / 'task.yaml'} (nothing was prepared)")
    return mirror


def checkout(spec: TaskSpec, cache: Path, dest: Path) -> int:
    """Write the tree of repo.commit (its subdir) into dest, which must not exist; the number of files."""
    repo = spec.repo
    assert repo is not None
    mirror = _mirror(spec, repo, cache)
    treeish = f"{repo.commit}:{repo.subdir}" if repo.subdir not in ("", ".") else repo.commit
    proc = _git(["-C", str(mirror), "archive", "--format=tar", treeish])
    if proc.returncode != 0:
        raise UserError(f"{spec.name}: {repo.subdir!r} is not a folder at commit {repo.commit} of {repo.url}; "
                        f"check 'repo.subdir' in {spec.home / 'task.yaml'}")
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as archive:
        members = [m for m in archive.getmembers() if m.isfile() or m.isdir()]  # no links from a repository
        archive.extractall(dest, members=members, filter="data")
    return sum(m.isfile() for m in members)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_download(spec: TaskSpec, download: Download, cache: Path) -> Path:
    """The verified cached copy of a download (fetched when absent); a mismatch is one line, no file kept."""
    root = cache / "downloads"
    root.mkdir(parents=True, exist_ok=True)
    cached = root / download.sha256
    if cached.is_file() and _sha256_file(cached) == download.sha256:
        return cached
    fd, tmp_name = tempfile.mkstemp(prefix=".part-", dir=root)
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(download.url, timeout=DOWNLOAD_TIMEOUT_S) as resp:
            for chunk in iter(lambda: resp.read(_CHUNK), b""):
                digest.update(chunk)
                out.write(chunk)
        got = digest.hexdigest()
        if got != download.sha256:
            raise UserError(f"{spec.name}: {download.url} has sha256 {got}, but task.yaml pins {download.sha256}; "
                            "the file changed or the pin is wrong (nothing was kept)")
        os.replace(tmp, cached)
        return cached
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise UserError(f"{spec.name}: cannot download {download.url} ({reason}); check the URL and the network, "
                        "or prepare without the optional downloads") from None
    finally:
        tmp.unlink(missing_ok=True)


def place_downloads(spec: TaskSpec, cache: Path, staging: Path, optional: bool) -> list[str]:
    """Copy the verified downloads into the staging workspace at their dest; the dests placed."""
    placed = []
    for download in spec.downloads:
        if download.optional and not optional:
            continue
        source = fetch_download(spec, download, cache)
        target = staging / download.dest
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        placed.append(download.dest)
    return placed
