"""External tasks: a baseline from a git repository at a pinned commit, and checksummed downloads, fetched at
prepare. Served locally: a bare repository through file:// and a loopback HTTP server on 127.0.0.1."""

from __future__ import annotations

import functools
import hashlib
import http.server
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

from researchbench.benchmark.authoring.task_check import PASS, check_task
from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.tasks import workspace as ws
from researchbench.benchmark.tasks.manifest import load_task
from tests.conftest import FIXTURES, run_cli

LINE = FIXTURES / "check_tasks" / "line"
EXTRA = b'{"note": "a downloaded file"}\n'
MODEL = (LINE / "baseline" / "model.py").read_text()


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", *args],
                          cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def bare_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A bare repository with two commits: the first holds model.py at the root, the second moves it to pkg/."""
    work = tmp_path_factory.mktemp("upstream")
    git("init", "-q", cwd=work)
    (work / "model.py").write_text(MODEL)
    (work / "README").write_text("upstream\n")
    git("add", "-A", cwd=work)
    git("commit", "-qm", "first", cwd=work)
    first = git("rev-parse", "HEAD", cwd=work)
    (work / "pkg").mkdir()
    git("mv", "model.py", "pkg/model.py", cwd=work)
    git("commit", "-qm", "second", cwd=work)
    second = git("rev-parse", "HEAD", cwd=work)
    bare = tmp_path_factory.mktemp("remote") / "upstream.git"
    git("clone", "-q", "--bare", str(work), str(bare))
    return bare, first, second


@pytest.fixture(scope="module")
def http_root(tmp_path_factory: pytest.TempPathFactory):
    """A loopback HTTP server over a folder; yields (folder, base URL)."""
    folder = tmp_path_factory.mktemp("served")
    (folder / "extra.json").write_bytes(EXTRA)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def external_task(tmp_path: Path, repo: dict, downloads: list[dict] | None = None) -> Path:
    """The line task with its model.py taken from the repository instead of its own baseline folder."""
    task = tmp_path / "tasks" / "line"
    shutil.copytree(LINE, task)
    (task / "baseline" / "model.py").unlink()
    raw = yaml.safe_load((task / "task.yaml").read_text())
    raw["repo"] = repo
    if downloads is not None:
        raw["downloads"] = downloads
    (task / "task.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    return task


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_repo_at_pinned_commit_and_download_are_prepared(tmp_path: Path, bare_repo, http_root) -> None:
    bare, first, _ = bare_repo
    _, base = http_root
    task = external_task(tmp_path, {"url": bare.as_uri(), "commit": first},
                         [{"url": f"{base}/extra.json", "sha256": sha(EXTRA), "dest": "data/extra.json"}])
    prepared = ws.prepare(load_task(task), root=tmp_path / "ws", log=lambda _: None)
    files = prepared.baseline_files()
    assert set(files) == {"model.py", "README", "driver.py"}  # the checkout with the task's driver laid over it
    assert files["model.py"].decode() == MODEL
    assert (prepared.public_dir / "extra.json").read_bytes() == EXTRA
    assert ws.workspace_status(load_task(task), root=tmp_path / "ws") == "prepared"
    # the baseline from the repository runs in the sandbox and scores like the local one
    report = check_task(task, root=tmp_path / "ws", skip=("label-probe", "prepare-deterministic", "trivial"))
    assert {r.name: r.status for r in report.rows}["baseline-record"] == PASS, report.table()


def test_subdir_of_a_later_commit(tmp_path: Path, bare_repo) -> None:
    bare, _, second = bare_repo
    task = external_task(tmp_path, {"url": bare.as_uri(), "commit": second, "subdir": "pkg"})
    prepared = ws.prepare(load_task(task), root=tmp_path / "ws", log=lambda _: None)
    assert set(prepared.baseline_files()) == {"model.py", "driver.py"}


def test_wrong_commit_is_one_line_and_leaves_nothing(tmp_path: Path, bare_repo) -> None:
    bare, _, _ = bare_repo
    task = external_task(tmp_path, {"url": bare.as_uri(), "commit": "0" * 40})
    with pytest.raises(UserError) as err:
        ws.prepare(load_task(task), root=tmp_path / "ws", log=lambda _: None)
    message = str(err.value)
    assert f"commit {'0' * 40} is not in {bare.as_uri()}" in message and "\n" not in message
    assert not (tmp_path / "ws" / "line").exists()
    assert not list((tmp_path / "ws").glob(".line.preparing-*"))

    result = run_cli("--task", "line", "--skip-requirements", script="setup.py",
                     env={"RESEARCHBENCH_TASKS_PATH": str(task), "RESEARCHBENCH_WORKSPACE": str(tmp_path / "ws2")})
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "is not in" in result.stderr


def test_wrong_checksum_is_one_line_and_keeps_no_file(tmp_path: Path, bare_repo, http_root) -> None:
    bare, first, _ = bare_repo
    _, base = http_root
    task = external_task(tmp_path, {"url": bare.as_uri(), "commit": first},
                         [{"url": f"{base}/extra.json", "sha256": "a" * 64, "dest": "data/extra.json"}])
    with pytest.raises(UserError) as err:
        ws.prepare(load_task(task), root=tmp_path / "ws", log=lambda _: None)
    assert f"has sha256 {sha(EXTRA)}, but task.yaml pins {'a' * 64}" in str(err.value)
    assert not (tmp_path / "ws" / "line").exists()
    assert not [p for p in (tmp_path / "ws" / ".cache" / "downloads").iterdir()]  # no partial or unverified file

    missing = external_task(tmp_path / "b", {"url": bare.as_uri(), "commit": first},
                            [{"url": f"{base}/absent.json", "sha256": "a" * 64, "dest": "data/extra.json"}])
    with pytest.raises(UserError, match="cannot download .*absent.json"):
        ws.prepare(load_task(missing), root=tmp_path / "ws", log=lambda _: None)


def test_optional_downloads_only_on_request(tmp_path: Path, bare_repo, http_root) -> None:
    bare, first, _ = bare_repo
    _, base = http_root
    task = external_task(tmp_path, {"url": bare.as_uri(), "commit": first},
                         [{"url": f"{base}/extra.json", "sha256": sha(EXTRA), "dest": "raw/extra.json",
                           "optional": True}])
    spec = load_task(task)
    root = tmp_path / "ws"
    prepared = ws.prepare(spec, root=root, log=lambda _: None)
    assert not (prepared.root / "raw").exists()  # the offline data is the default
    prepared = ws.prepare(spec, root=root, log=lambda _: None, downloads=True)
    assert (prepared.root / "raw" / "extra.json").read_bytes() == EXTRA
    lines: list[str] = []
    ws.prepare(spec, root=root, log=lines.append, downloads=True)
    assert "already prepared" in lines[0]


@pytest.mark.parametrize("change, key", [
    ({"repo": {"url": "x", "commit": "main"}}, "repo.commit"),
    ({"repo": {"url": "x", "commit": "a" * 40, "subdir": "../up"}}, "repo.subdir"),
    ({"repo": {"url": "x", "commit": "a" * 40, "branch": "main"}}, "repo.branch"),
    ({"downloads": [{"url": "ftp://h/x", "sha256": "a" * 64, "dest": "data/x"}]}, "downloads[0].url"),
    ({"downloads": [{"url": "http://h/x", "sha256": "abc", "dest": "data/x"}]}, "downloads[0].sha256"),
    ({"downloads": [{"url": "http://h/x", "sha256": "a" * 64, "dest": "../x"}]}, "downloads[0].dest"),
    ({"downloads": [{"url": "http://h/x", "sha256": "a" * 64, "dest": "baseline/x"}]}, "downloads[0].dest"),
    ({"downloads": [{"url": "http://h/x", "sha256": "a" * 64}]}, "downloads[0].dest"),
])
def test_manifest_fields_are_strict(tmp_path: Path, change: dict, key: str) -> None:
    task = tmp_path / "line"
    shutil.copytree(LINE, task)
    raw = yaml.safe_load((task / "task.yaml").read_text())
    raw.update(change)
    (task / "task.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(UserError, match=f"'{key.replace('[', '.').replace(']', '.')}"):
        load_task(task)
