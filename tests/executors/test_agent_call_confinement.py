"""Agent code called inside a task's driver (continual_learning, federated_learning) is confined by the
kernel, not only by the audit hook: the three ways past the hook that forged both tasks' hidden-test
scores (issue 26: `dir_fd` reads, `fchdir` + `dir_fd` writes, `_posixsubprocess.fork_exec`) are tried
through the real path (a phase run by the local executor in its sandbox, then scored) and must each be
refused by Landlock or seccomp, with the run otherwise honest and scored."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from task_kit import prepared_task, run_sandboxed
from researchbench.task_runtime import IsolationError, confine, run_isolated

# Each attack is shaped so the audit hook lets it through (relative names under a dir fd, an fd for a path,
# no audited event at all): only the kernel can refuse it. An OSError with an errno is the kernel's answer
# (the hook raises PermissionError without one).
ATTACKS = r'''
import os, sys
from pathlib import Path

FOUND = []


def _out_folder():
    """This call's output folder, read from the driver's frames (nothing stops agent code from looking)."""
    frame = sys._getframe(1)
    while frame is not None:
        for name in ("child_out", "out"):
            value = frame.f_locals.get(name)
            if isinstance(value, Path) and value.is_dir():
                return value
        frame = frame.f_back
    raise RuntimeError("no output folder found")


def _try(name, action):
    try:
        action()
    except OSError as exc:
        FOUND.append(f"{name}: refused errno {exc.errno}")
        return
    FOUND.append(f"{name}: LEAK")


def _fd_for(path):
    """An O_PATH descriptor for `path`, reached one relative name at a time: the hook sees only the names."""
    fd = os.open("/", os.O_PATH)
    for part in Path(path).parts[1:]:
        fd = os.open(part, os.O_PATH, dir_fd=fd)
    return fd


def _dir_fd_read(data, shard):
    parent = _fd_for(os.path.dirname(data))
    _try("dir_fd listdir", lambda: os.listdir(os.open(os.path.basename(data), os.O_RDONLY | os.O_DIRECTORY,
                                                      dir_fd=parent)))
    _try("dir_fd open", lambda: os.read(os.open(os.path.basename(data) + "/" + shard, os.O_RDONLY,
                                                dir_fd=parent), 4))


def _fchdir_write(out):
    targets = [out.parent, Path("/tmp"), Path("/dev/shm"), Path(sys.argv[0]).resolve().parent]
    folders = [(target, _fd_for(target)) for target in targets]
    os.fchdir(_fd_for(out))  # relative names now look like the output folder's to the hook
    for target, folder in folders:
        _try(f"fchdir write {target}", lambda: os.write(
            os.open("stash.bin", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=folder), b"0" * 4096))


def _fork_exec(data, shard):
    import _posixsubprocess
    def run():
        readable, writable = os.pipe()
        err_r, err_w = os.pipe()
        pid = _posixsubprocess.fork_exec(
            [b"/bin/cat", f"{data}/{shard}".encode()], [b"/bin/cat"], True, (writable,), None, None,
            -1, -1, -1, writable, -1, -1, err_r, err_w, False, False, -1, None, None, None, -1, None, False)
        os.close(writable)
        got = os.read(readable, 16)
        os.waitpid(pid, 0)
        if not got:
            raise OSError(0, "the program printed nothing")
    _try("fork_exec", run)


def _more(out, code_file):
    _try("utime a code file by fd", lambda: os.utime(code_file))
    _try("xattr stash", lambda: os.setxattr(os.open(out, os.O_RDONLY), "user.stash", b"1" * 64))
    _try("signal the driver", lambda: os.kill(os.getppid(), 0))


def attack(shard):
    data = sys.argv[sys.argv.index("--data") + 1]
    out = _out_folder()
    code_file = os.open(sys.argv[0], os.O_RDONLY)  # the driver, opened while the cwd is still the code dir
    _dir_fd_read(data, shard)
    _fchdir_write(out)
    _fork_exec(data, shard)
    _more(out, code_file)
    print("ATTACKS " + " | ".join(FOUND), flush=True)
'''

LEARNER = ATTACKS + '''
import numpy as np


def train_split(state, x, y, classes, split, params, device):
    attack("train_split4.npz")
    return {"count": np.array([split + 1.0])}


def predict(state, x, params, device):
    return np.zeros(len(x), dtype=int)
'''

FEDLEARN = ATTACKS + '''
import numpy as np


def init_model(params, device):
    return {"w": np.zeros(1)}


def client_update(model, client_state, x, y, params, device):
    attack("client9.npz")
    return {"n": np.array([float(len(y))])}, None


def server_aggregate(model, updates, sizes, server_state, params, device):
    attack("client9.npz")
    return model, None


def predict(model, x, params, device):
    return np.zeros(len(x), dtype=int)
'''

# errno 13: Landlock; 1: seccomp. The xattr and the signal are refused by the hook already (no errno).
EXPECTED = {"dir_fd listdir": "13", "dir_fd open": "13", "fork_exec": "1", "utime a code file by fd": "1",
            "xattr stash": "None|1", "signal the driver": "None|1"}


def _reports(stdout: bytes) -> list[dict[str, str]]:
    lines = [line for line in stdout.decode(errors="replace").splitlines() if line.startswith("ATTACKS ")]
    return [dict(part.split(": ", 1) for part in line[len("ATTACKS "):].split(" | ")) for line in lines]


@pytest.mark.parametrize("task, files, calls", [
    ("continual_learning", {"learner.py": LEARNER}, 5),
    ("federated_learning", {"fedlearn.py": FEDLEARN}, 11),
], ids=["continual_learning", "federated_learning"])
def test_the_three_bypasses_of_the_audit_hook_are_refused_by_the_kernel(task: str, files: dict[str, str], calls: int,
                                                                         tmp_path: Path) -> None:
    prepared = prepared_task(task)
    run = run_sandboxed(prepared, files, "test", tmp_path)
    if not run.sandboxed:
        pytest.skip("bubblewrap is unusable here")
    reports = _reports(run.outcome.stdout)
    assert len(reports) == calls, run.outcome.stdout.decode(errors="replace")[-2000:] + run.outcome.bug_reason
    for report in reports:
        assert not [name for name, verdict in report.items() if "LEAK" in verdict], report
        for name, code in EXPECTED.items():
            assert re.fullmatch(f"refused errno ({code})", report[name]), (name, report)
        writes = {name: verdict for name, verdict in report.items() if name.startswith("fchdir write")}
        assert len(writes) == 4 and set(writes.values()) == {"refused errno 13"}, writes
    assert run.outcome.ok, run.outcome.bug_reason  # the honest part scored, on the hidden test
    assert run.outcome.primary is not None


def test_a_kernel_without_landlock_refuses_the_call_before_any_agent_code(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(confine, "landlock_abi", lambda: 0)
    ran = tmp_path / "ran"
    with pytest.raises(IsolationError, match=r"^split 0: agent calls are confined with Landlock, which this kernel"):
        run_isolated("split 0", lambda: None, lambda _: ran.touch(), [tmp_path / "data"], [tmp_path])
    assert not ran.exists()


@pytest.mark.skipif(sys.platform != "linux" or confine.unavailable() != "", reason="needs Landlock")
def test_a_confined_child_reads_only_what_it_may_and_writes_only_its_folder(tmp_path: Path) -> None:
    """The seal itself, without the audit hook, on host paths: a folder listed as blocked stays unreadable
    however it is reached, and the output folder is the only place a write lands."""
    secret, out = tmp_path / "secret", tmp_path / "out"
    secret.mkdir()
    out.mkdir()
    (secret / "labels").write_text("7")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        confine.confine([secret], [out])
        verdicts = []
        for name, action in (
            ("open", lambda: open(secret / "labels").read()),
            ("proc root", lambda: open(f"/proc/self/root{secret}/labels").read()),
            ("dir fd", lambda: os.open("labels", os.O_RDONLY, dir_fd=os.open(secret, os.O_PATH))),
            ("write beside", lambda: open(tmp_path / "x", "w")),
            ("exec", lambda: os.execv("/bin/true", ["true"])),
        ):
            try:
                action()
                verdicts.append(f"{name}=LEAK")
            except OSError as exc:
                verdicts.append(f"{name}={exc.errno}")
        (out / "ok").write_text("written")
        os.write(write, " ".join(verdicts).encode())
        os._exit(0)
    os.close(write)
    report = os.read(read, 4096).decode()
    os.waitpid(pid, 0)
    assert report == "open=13 proc root=13 dir fd=13 write beside=13 exec=1", report
    assert (out / "ok").read_text() == "written" and not (tmp_path / "x").exists()


KMEANS_CALL = """
import sys
from pathlib import Path
from researchbench.task_runtime import run_isolated

out, blocked = Path(sys.argv[1]), Path(sys.argv[2])


def work(_):
    import numpy as np
    from sklearn.cluster import KMeans

    labels = KMeans(n_clusters=2, n_init=1, random_state=0).fit_predict(np.array([[0.0], [0.1], [5.0], [5.1]]))
    try:
        open("/proc/self/mem", "rb").read(1)
        mem = "LEAK"
    except PermissionError as exc:
        mem = str(exc)
    (out / "report").write_text(f"{labels[0] == labels[1] != labels[2]} {mem}")


run_isolated("kmeans", lambda: None, work, blocked=[blocked], allowed_writes=[out])
"""


def test_an_isolated_call_may_run_kmeans_but_not_read_its_memory(tmp_path: Path) -> None:
    """scikit-learn's KMeans asks threadpoolctl, which reads the process's own /proc/self/maps (the libraries
    loaded): a continual_learning answerer lost an experiment to its refusal. /proc/self/mem stays refused, and
    joblib (imported by scikit-learn) is told up front that the child has no process pools, not warned each time.
    The call runs in a fresh interpreter, as a task's driver does (a pytest worker's captured streams do not
    survive the fork's closing of inherited files)."""
    import subprocess

    from conftest import HANG_TIMEOUT_S, SESSION_START_ENV

    out, blocked = tmp_path / "out", tmp_path / "blocked"
    out.mkdir()
    blocked.mkdir()
    done = subprocess.run([sys.executable, "-c", KMEANS_CALL, str(out), str(blocked)], capture_output=True,
                          text=True, timeout=HANG_TIMEOUT_S, env=SESSION_START_ENV)
    assert done.returncode == 0, done.stderr
    assert (out / "report").read_text() == "True isolation: process memory is not readable"
    assert "serial mode" not in done.stderr  # joblib's warning that a sealed child has no semaphores, once per child
