"""One run must not disturb another (issue 17 §2), tried through the real local executor.

Each "harness" is a LocalExecutor of its own (one is a separate process where a crash is part of the
attack). A root harness runs every job as a uid no other live job holds, so a job's RLIMIT_NPROC counts
that job alone; jobs cannot create user namespaces.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.executors import Limits, LocalExecutor, LocalExecutorConfig
from researchbench.benchmark.executors.local.job_uids import JOB_USER, JobUids, uids_with_processes
from researchbench.benchmark.executors.local.no_userns import no_userns_program
from tests.executor_conformance import make_job, run
from test_executor_local import HAS_BWRAP, HAS_CGROUPS

ROOT = Path(__file__).resolve().parents[2]
root_bwrap = pytest.mark.skipif(not (HAS_BWRAP and os.geteuid() == 0),
                                reason="jobs get uids of their own only under a root harness with bubblewrap")


def _uid_range(count: int) -> tuple[int, int]:
    """A range no other test (or concurrent test run) on this host uses: leases are host-wide."""
    first = 300000 + (int.from_bytes(os.urandom(3), "big") % 100000) * 10
    return first, count


def _executor(first: int, count: int, **cfg: object) -> LocalExecutor:
    use_cgroups = bool(cfg.pop("use_cgroups", True))
    return LocalExecutor(LocalExecutorConfig(sandbox="bwrap", job_uid=first, job_uid_count=count, **cfg),  # type: ignore[arg-type]
                         use_cgroups=use_cgroups)


def _wait_for(path: Path, timeout_s: float = 120.0) -> str:
    deadline = time.monotonic() + timeout_s
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return path.read_text()


# The noisy neighbour: starts up to 300 threads, says how many it got, holds them until the gate opens.
HOLD_300_THREADS = """
    import pathlib, sys, threading, time
    hold = threading.Event()
    started = 0
    for _ in range(300):
        try:
            threading.Thread(target=hold.wait, daemon=True).start()
        except RuntimeError:  # "can't start new thread": its own process limit, as it should be
            break
        started += 1
    pathlib.Path("holding.txt").write_text(str(started))
    gate = pathlib.Path(sys.argv[1]) / "open"
    while not gate.exists():
        time.sleep(0.05)
    print(started)
"""

# The victims, baseline-like: 50 Python threads alive at once; OpenBLAS starting its 8 threads.
FIFTY_THREADS = """
    import threading
    go = threading.Event()
    threads = [threading.Thread(target=go.wait) for _ in range(50)]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join()
    print("ok")
"""
BLAS_THREADS = """
    import numpy as np
    a = np.random.default_rng(0).random((600, 600))
    assert np.allclose(a @ np.eye(600), a)
    print("ok")
"""


@root_bwrap
@pytest.mark.parametrize("victim_code,cpus", [(FIFTY_THREADS, 1), (BLAS_THREADS, 8)], ids=["50-threads", "openblas-8"])
@pytest.mark.parametrize("use_cgroups", [pytest.param(True, marks=pytest.mark.skipif(not HAS_CGROUPS, reason="no cgroups")),
                                         False], ids=["cgroups", "rlimits-only"])
def test_a_job_holding_300_threads_does_not_starve_another_harness(tmp_path: Path, use_cgroups: bool,
                                                                   victim_code: str, cpus: int) -> None:
    first, count = _uid_range(4)
    gate = tmp_path / "gate"
    gate.mkdir()
    hog = make_job(tmp_path, HOLD_300_THREADS, str(gate), name="hog", timeout_s=60, readonly=(gate,))
    victim = make_job(tmp_path, victim_code, name="victim", timeout_s=60, limits=Limits(cpus=cpus))
    with _executor(first, count, use_cgroups=use_cgroups) as harness_a, \
            _executor(first, count, use_cgroups=use_cgroups) as harness_b:
        held = harness_a.submit(hog)
        try:
            holding = int(_wait_for(hog.workdir / "holding.txt"))
            assert holding > 200, f"the neighbour got only {holding} threads: the attack did not happen"
            result, out, err = run(harness_b, victim)
        finally:
            (gate / "open").touch()
        assert held.result(timeout=120).ok
    assert result.ok, err
    assert out == "ok\n"


FORK_BOMB = """
    import os, time
    print(os.getuid(), flush=True)
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.001)
"""


@root_bwrap
@pytest.mark.parametrize("use_cgroups", [pytest.param(True, marks=pytest.mark.skipif(not HAS_CGROUPS, reason="no cgroups")),
                                         False], ids=["cgroups", "rlimits-only"])
def test_a_fork_bomb_is_contained_and_its_uid_left_empty(tmp_path: Path, use_cgroups: bool) -> None:
    first, count = _uid_range(2)
    bomb = make_job(tmp_path, FORK_BOMB, name="bomb", timeout_s=3.0, limits=Limits(max_processes=64))
    with _executor(first, count, use_cgroups=use_cgroups) as harness:
        result, out, _ = run(harness, bomb)
        uid = int(out.split()[0])
        assert not result.ok and (result.timed_out or result.exit_code != 0)
        assert first <= uid < first + count
        assert uid not in uids_with_processes(), "a process of the fork bomb outlived its job"
        after, out, err = run(harness, make_job(tmp_path, "print('still here')", name="after"))
    assert after.ok and out == "still here\n", err


USERNS_ATTEMPTS = """
    import ctypes, errno, subprocess
    cli = subprocess.run(["unshare", "-Urm", "true"], capture_output=True, text=True)
    print("unshare-cli", cli.returncode, cli.stderr.strip())
    libc = ctypes.CDLL(None, use_errno=True)
    rc = libc.unshare(0x10000000)  # CLONE_NEWUSER
    print("unshare-call", rc, errno.errorcode.get(ctypes.get_errno()))
    # threads and processes still start: clone3 is refused, the C library falls back to clone
    print("subprocess", subprocess.run(["true"]).returncode)
"""


@pytest.mark.skipif(not HAS_BWRAP, reason="no working bubblewrap on this host")
def test_a_job_cannot_create_a_user_namespace(tmp_path: Path) -> None:
    job = make_job(tmp_path, USERNS_ATTEMPTS, name="userns")
    with LocalExecutor(LocalExecutorConfig(sandbox="bwrap")) as harness:
        result, out, err = run(harness, job)
    assert result.ok, err
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert lines["unshare-cli"].startswith("1 ") and "Operation not permitted" in lines["unshare-cli"]
    assert lines["unshare-call"] == "-1 EPERM"
    assert lines["subprocess"] == "0"


UID_THEN_WAIT = """
    import os, pathlib, sys, time
    pathlib.Path("uid.txt").write_text(str(os.getuid()))
    gate = pathlib.Path(sys.argv[1]) / "open"
    while not gate.exists():
        time.sleep(0.05)
    print(os.getuid())
"""


@root_bwrap
def test_concurrent_jobs_of_two_harnesses_get_different_uids(tmp_path: Path) -> None:
    first, count = _uid_range(3)
    gate = tmp_path / "gate"
    gate.mkdir()
    jobs = [make_job(tmp_path, UID_THEN_WAIT, str(gate), name=f"job{i}", readonly=(gate,)) for i in range(3)]
    with _executor(first, count, max_parallel=2) as harness_a, _executor(first, count) as harness_b:
        futures = [harness_a.submit(jobs[0]), harness_a.submit(jobs[1]), harness_b.submit(jobs[2])]
        try:
            uids = [int(_wait_for(job.workdir / "uid.txt")) for job in jobs]  # all three alive at once
        finally:
            (gate / "open").touch()
        assert all(f.result(timeout=120).ok for f in futures)
    assert len(set(uids)) == 3 and all(first <= u < first + count for u in uids)
    # every file a job made on the host belongs to its own uid
    assert [(job.workdir / "uid.txt").stat().st_uid for job in jobs] == uids


HARNESS_THEN_KILLED = """
    import sys
    from pathlib import Path
    from researchbench.benchmark.executors import LocalExecutor, LocalExecutorConfig
    from tests.executor_conformance import make_job
    first, tmp = int(sys.argv[1]), Path(sys.argv[2])
    job = make_job(tmp, "import os, time\\nopen('uid.txt', 'w').write(str(os.getuid()))\\ntime.sleep(600)", name="held")
    ex = LocalExecutor(LocalExecutorConfig(sandbox="bwrap", job_uid=first, job_uid_count=1))
    ex.submit(job).result()
"""


@root_bwrap
def test_the_uid_of_a_killed_harness_is_reclaimed(tmp_path: Path) -> None:
    first, _ = _uid_range(1)
    harness = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HARNESS_THEN_KILLED), str(first), str(tmp_path)],
                               cwd=ROOT, stdin=subprocess.DEVNULL)
    try:
        assert int(_wait_for(tmp_path / "held" / "work" / "uid.txt")) == first
        assert JobUids(first, 1).try_acquire() is None, "the live harness's lease was not exclusive"
    finally:
        harness.send_signal(signal.SIGKILL)
        harness.wait()
    # The only uid of the range comes back: the next harness's job runs as it, without waiting forever.
    job = make_job(tmp_path, "import getpass, os\nprint(os.getuid(), getpass.getuser())", name="next")
    with _executor(first, 1) as next_harness:
        result, out, err = run(next_harness, job)
    assert result.ok, err
    assert out == f"{first} {JOB_USER}\n"  # the uid has no passwd entry, but the job still has a user name


def test_uid_leases_are_exclusive_and_released(tmp_path: Path) -> None:
    uids = JobUids(400000, 2, lock_dir=tmp_path / "locks")
    a, b = uids.try_acquire(), uids.try_acquire()
    assert a is not None and b is not None and {a.uid, b.uid} == {400000, 400001}
    assert uids.try_acquire() is None
    stop = threading.Event()
    waiter: list[object] = []
    thread = threading.Thread(target=lambda: waiter.append(uids.acquire(stop)))
    thread.start()
    time.sleep(0.3)
    assert not waiter, "a job got a uid that another live job holds"
    a.release()
    a.release()  # idempotent
    thread.join(timeout=30)
    assert [getattr(w, "uid", None) for w in waiter] == [a.uid]
    stop.set()
    assert uids.acquire(stop) is None  # a stopping executor does not wait for uids


def test_a_uid_that_owns_a_process_is_skipped(tmp_path: Path) -> None:
    """Someone else's process in the range (or a dying job of a killed harness) keeps its uid out of use."""
    owner = 410000 if os.geteuid() == 0 else os.getuid()
    proc = subprocess.Popen(["sleep", "120"], user=owner if os.geteuid() == 0 else None)
    try:
        lease = JobUids(owner, 2, lock_dir=tmp_path / "locks").try_acquire()
    finally:
        proc.kill()
        proc.wait()
    assert lease is not None and lease.uid == owner + 1


@pytest.mark.parametrize("first,count", [(0, 10), (200000, 0), (2**31 - 10, 100)])
def test_a_bad_uid_range_is_one_clear_error(tmp_path: Path, first: int, count: int) -> None:
    with pytest.raises(UserError, match="executor.job_uid_count"):
        JobUids(first, count, lock_dir=tmp_path / "locks")


@pytest.mark.skipif(os.geteuid() != 0, reason="a planted directory owned by another uid needs root to make")
def test_a_planted_lock_dir_is_refused(tmp_path: Path) -> None:
    planted = tmp_path / "researchbench" / "job-uids"
    planted.mkdir(parents=True)
    os.chown(planted.parent, 4242, 4242)
    with pytest.raises(UserError, match="remove it"):
        JobUids(200000, 10, lock_dir=planted)


@pytest.mark.skipif(not HAS_BWRAP, reason="no working bubblewrap on this host")
def test_a_missing_libseccomp_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sandboxed jobs are never started without the filter: the executor refuses, naming the fix."""
    monkeypatch.setitem(sys.modules, "pyseccomp", None)  # what an uninstalled package looks like to import
    no_userns_program.cache_clear()
    try:
        with pytest.raises(UserError, match="libseccomp2"):
            LocalExecutor(LocalExecutorConfig(sandbox="bwrap"))
    finally:
        no_userns_program.cache_clear()


NPROC = "import resource\nprint(resource.getrlimit(resource.RLIMIT_NPROC)[0])"


@pytest.mark.parametrize("sandbox,use_cgroups", [
    pytest.param("bwrap", True, marks=root_bwrap),
    pytest.param("bwrap", False, marks=root_bwrap),
    pytest.param("none", True, marks=pytest.mark.skipif(not HAS_CGROUPS, reason="no cgroups")),
    ("none", False),
])
def test_rlimit_nproc_counts_only_what_it_should(tmp_path: Path, sandbox: str, use_cgroups: bool) -> None:
    """A job with its own uid gets its own process limit; a job on the harness's (shared) uid gets none
    where its pids cgroup bounds it, and the limit x capacity where nothing else would (the path a
    non-root harness takes)."""
    job = make_job(tmp_path, NPROC, limits=Limits(max_processes=77))
    cfg = LocalExecutorConfig(sandbox=sandbox, max_parallel=3, job_uid=_uid_range(1)[0])
    with LocalExecutor(cfg, use_cgroups=use_cgroups) as harness:
        result, out, err = run(harness, job)
    assert result.ok, err
    own_uid = sandbox == "bwrap" and os.geteuid() == 0
    inherited, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    shared = 77 * 3 if hard == resource.RLIM_INFINITY else min(77 * 3, hard)  # never above the hard limit
    expected = 77 if own_uid else (inherited if use_cgroups else shared)
    assert int(out) == expected
