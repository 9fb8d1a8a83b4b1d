"""The local executor: the shared conformance suite in both sandbox modes, plus what only a local
backend has (rlimits, cgroups, bwrap layout, GPU slots) and hostile agent-style programs."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.safefs import remove_tree
from researchbench.benchmark.executors import Job, Limits, LocalExecutor, LocalExecutorConfig
from researchbench.benchmark.executors.local import sandbox as sandbox_mod
from researchbench.benchmark.executors.local.cgroups import JobCgroup
from researchbench.benchmark.executors.local.held_files import HeldFiles
from researchbench.benchmark.executors.output import CappedWriter
from tests.fake_gpus import fake_devices
from tests.executor_conformance import (
    BACKGROUND_WRITER,
    BUSY_FOREVER,
    SLACK_S,
    ExecutorConformance,
    LoopbackServer,
    make_job,
    run,
)

def _bwrap_works() -> bool:
    return any(not sandbox_mod.probe_bwrap(p) for p in sandbox_mod.bwrap_candidates(None))


def _cgroups_work() -> bool:
    group = JobCgroup.create(memory_bytes=1 << 30, max_pids=64)
    if group is None:
        return False
    group.remove()
    return True


HAS_BWRAP = _bwrap_works()
HAS_CGROUPS = _cgroups_work()
needs_bwrap = pytest.mark.skipif(not HAS_BWRAP, reason="no working bubblewrap on this host")
needs_cgroups = pytest.mark.skipif(not HAS_CGROUPS, reason="cgroups are not writable here")


def _job_cgroups() -> set[str]:
    """This process's job cgroup directories currently present (to prove they are removed afterwards)."""
    from researchbench.benchmark.executors.local.cgroups import owner_tag

    found = set()
    for controller in ("memory", "pids", "cpuacct", "unified"):
        root = Path("/sys/fs/cgroup") / controller
        if root.is_dir():
            found |= {str(p) for p in root.rglob(f"researchbench-{owner_tag()}-*") if p.is_dir()}
    return found


# -- the conformance suite, once per sandbox mode ---------------------------------------------


class TestConformanceNone(ExecutorConformance):
    isolated = False

    def make_executor(self) -> LocalExecutor:
        return LocalExecutor(LocalExecutorConfig(sandbox="none"))


@needs_bwrap
class TestConformanceBwrap(ExecutorConformance):
    isolated = True

    def make_executor(self) -> LocalExecutor:
        ex = LocalExecutor(LocalExecutorConfig(sandbox="bwrap"))
        assert ex.sandbox_mode == "bwrap"
        return ex


# -- hostile programs --------------------------------------------------------------------------


@pytest.fixture(params=["none", pytest.param("bwrap", marks=needs_bwrap)])
def executor(request: pytest.FixtureRequest) -> Iterator[LocalExecutor]:
    ex = LocalExecutor(LocalExecutorConfig(sandbox=request.param))
    yield ex
    ex.shutdown()


FORK_BOMB = """
    import os, time
    print("forking", flush=True)
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.001)
"""


@pytest.mark.skipif(
    not HAS_CGROUPS and os.geteuid() == 0,
    reason="as root only a pids cgroup contains a fork bomb, and cgroups are not writable",
)
def test_fork_bomb_is_contained(executor: LocalExecutor, tmp_path: Path) -> None:
    before = _job_cgroups()
    job = make_job(tmp_path, FORK_BOMB, name="bomb", timeout_s=2.0, limits=Limits(max_processes=64))
    t0 = time.monotonic()
    result, _, _ = run(executor, job)
    assert not result.ok and (result.timed_out or result.exit_code != 0)
    assert time.monotonic() - t0 < job.timeout_s + SLACK_S
    # The harness survives and the next job runs normally.
    after, out, _ = run(executor, make_job(tmp_path, "print('still here')", name="after"))
    assert after.ok and out == "still here\n"
    assert _job_cgroups() <= before, "a job cgroup was left behind"


def test_huge_allocation_fails(executor: LocalExecutor, tmp_path: Path) -> None:
    job = make_job(
        tmp_path, "buf = bytearray(20 * 1024**3)\nprint('ALLOCATED')", limits=Limits(memory_gb=1)
    )
    result, out, err = run(executor, job)
    assert result.exit_code != 0 and not result.timed_out
    assert "ALLOCATED" not in out
    assert "MemoryError" in err or (result.exit_code or 0) < 0


@needs_cgroups
def test_cgroup_memory_limit_spans_processes(tmp_path: Path) -> None:
    """Three 600 MB children fit RLIMIT_AS=1G each, but not the job's 1 GB cgroup together."""
    job = make_job(
        tmp_path,
        """
        import os, time
        kids = []
        for _ in range(3):
            pid = os.fork()
            if pid == 0:
                block = b"x" * (600 << 20)  # touched, so it is resident
                time.sleep(3)
                os._exit(0)
            kids.append(pid)
        statuses = [os.waitpid(pid, 0)[1] for pid in kids]
        print("killed" if any(os.WIFSIGNALED(s) for s in statuses) else "all survived")
        """,
        limits=Limits(memory_gb=1),
    )
    with LocalExecutor(LocalExecutorConfig(sandbox="none")) as ex:
        result, out, err = run(ex, job)
    assert "killed" in out, (result, out, err)
    # what killed it is said: a bare SIGKILL tells an agent nothing
    assert "for going over the job's memory limit of 1 GB" in result.violation, result


@needs_cgroups
def test_job_runs_in_its_own_cgroup_with_limits(tmp_path: Path) -> None:
    job = make_job(
        tmp_path,
        """
        import json
        found = {}
        for line in open("/proc/self/cgroup"):
            _, ctrl, path = line.strip().split(":", 2)
            if ctrl == "memory":
                found["memory"] = int(open(f"/sys/fs/cgroup/memory{path}/memory.limit_in_bytes").read())
            if ctrl == "pids":
                found["pids"] = open(f"/sys/fs/cgroup/pids{path}/pids.max").read().strip()
        print(json.dumps(found))
        """,
        limits=Limits(memory_gb=2, max_processes=77),
    )
    if not Path("/sys/fs/cgroup/memory").is_dir():
        pytest.skip("cgroup v1 layout not present")
    before = _job_cgroups()
    with LocalExecutor(LocalExecutorConfig(sandbox="none")) as ex:
        result, out, err = run(ex, job)
    assert result.ok, err
    assert json.loads(out) == {"memory": 2 << 30, "pids": "77"}
    assert _job_cgroups() <= before


@needs_cgroups
def test_job_cgroup_accounts_the_cpu_time_of_ended_processes() -> None:
    group = JobCgroup.create(memory_bytes=1 << 30, max_pids=64)
    assert group is not None
    try:
        if group.cpu_seconds() is None:
            pytest.skip("no writable CPU accounting (cpuacct) here: jobs are measured from /proc")
        worker = subprocess.Popen([sys.executable, "-c", "import time\nwhile time.process_time() < 0.3: pass"],
                                  preexec_fn=group.join_from_child)
        assert worker.wait(timeout=60) == 0
        assert group.cpu_seconds() >= 0.3  # the worker is gone; its time stays
    finally:
        group.remove()


@needs_cgroups
def test_stale_cgroups_of_a_dead_harness_are_cleaned(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only cgroups that provably belong to a dead harness of this host are swept: same boot, same pid
    namespace, and the owner's pid is gone or reused by a later process. Others' are left alone."""
    from researchbench.benchmark.executors.local import cgroups

    dead = subprocess.Popen(["sleep", "60"])
    dead_tag = cgroups.owner_tag(dead.pid)  # taken while it lived: boot, pid namespace, pid, start time
    dead.kill()
    dead.wait()
    alive = subprocess.Popen(["sleep", "60"])
    boot, pidns, pid, start = cgroups.owner_tag(alive.pid).split("-")
    probe = JobCgroup.create(memory_bytes=1 << 30, max_pids=64)
    assert probe is not None
    parents = [d.parent for d in probe.dirs]
    probe.remove()
    sleeper = subprocess.Popen(["sleep", "60"])
    stale = [p / f"researchbench-{dead_tag}-deadbeef" for p in parents]
    foreign = [p / name for p in parents for name in (
        f"researchbench-{boot}-{pidns}-{pid}-{start}-a11ce000",  # a live harness
        f"researchbench-{boot}-{int(pidns) + 1}-{dead.pid}-1-0be1e000",  # another pid namespace
        f"researchbench-000000000000-{pidns}-{dead.pid}-1-0bee0000",  # another boot (or host)
        f"researchbench-{dead.pid}-01dform0",  # a format that proves nothing
    )]
    try:
        for d in stale:
            d.mkdir()
            (d / "cgroup.procs").write_text(str(sleeper.pid))
        for d in foreign:
            d.mkdir()
        monkeypatch.setattr(cgroups, "_swept", set())
        fresh = JobCgroup.create(memory_bytes=1 << 30, max_pids=64)
        assert fresh is not None
        fresh.remove()
        assert sleeper.wait(timeout=10) == -9
        assert not any(d.exists() for d in stale)
        assert all(d.exists() for d in foreign)
    finally:
        for proc in (sleeper, alive):
            proc.kill()
            proc.wait()
        for d in stale + foreign:
            if d.exists():
                d.rmdir()


def _vm_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def test_gigabyte_of_output_is_capped_without_memory_growth(tmp_path: Path) -> None:
    job = make_job(
        tmp_path,
        """
        import sys
        out = sys.stdout.buffer
        out.write(b"HEAD-OF-OUTPUT\\n")
        chunk = (b"y" * 1023 + b"\\n") * 1024
        for _ in range(1024):
            out.write(chunk)
        out.write(b"TAIL-OF-OUTPUT\\n")
        """,
        timeout_s=60,
    )
    try:  # reset the peak-RSS counter so VmHWM measures this test only
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    rss_before = _vm_kb("VmRSS")
    with LocalExecutor(LocalExecutorConfig(sandbox="none")) as ex:
        result, _, _ = run(ex, job)
    growth_mb = (_vm_kb("VmHWM") - rss_before) / 1024
    assert result.ok and result.stdout_truncated
    size = job.stdout_path.stat().st_size
    assert size <= job.output_cap_bytes
    with open(job.stdout_path, "rb") as f:
        assert f.read(15) == b"HEAD-OF-OUTPUT\n"
        f.seek(-15, os.SEEK_END)
        assert f.read() == b"TAIL-OF-OUTPUT\n"
    assert growth_mb < 100, f"harness peak RSS grew by {growth_mb:.0f} MB"


def test_capped_writer_exact_sizes(tmp_path: Path) -> None:
    fits = CappedWriter(tmp_path / "fits", cap=1000)
    fits.write(b"a" * 600)
    fits.write(b"b" * 400)
    assert fits.close() is False
    assert (tmp_path / "fits").read_bytes() == b"a" * 600 + b"b" * 400

    over = CappedWriter(tmp_path / "over", cap=1000)
    for i in range(100):
        over.write(bytes([65 + i % 26]) * 97)
    assert over.close() is True
    data = (tmp_path / "over").read_bytes()
    assert len(data) <= 1000 and data.startswith(b"A" * 97 + b"B" * 97)
    assert data.endswith(bytes([65 + 99 % 26]) * 20) and b"bytes dropped" in data


# -- sandbox specifics -------------------------------------------------------------------------


@needs_bwrap
def test_sandbox_root_has_no_capabilities(tmp_path: Path) -> None:
    job = make_job(
        tmp_path,
        """
        for line in open("/proc/self/status"):
            if line.startswith("CapEff"):
                print(line.split()[1])
        """,
    )
    with LocalExecutor(LocalExecutorConfig(sandbox="bwrap")) as ex:
        result, out, err = run(ex, job)
    assert result.ok, err
    assert int(out, 16) == 0


@needs_bwrap
def test_network_flag_allows_loopback(tmp_path: Path) -> None:
    server = LoopbackServer()
    try:
        job = make_job(
            tmp_path,
            "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 3); print('ok')",
            str(server.port),
            network=True,
        )
        with LocalExecutor(LocalExecutorConfig(sandbox="bwrap")) as ex:
            result, out, err = run(ex, job)
    finally:
        server.close()
    assert result.ok and out == "ok\n", err


@needs_bwrap
def test_readonly_dir_inside_writable_workdir_stays_readonly(tmp_path: Path) -> None:
    job = make_job(
        tmp_path,
        """
        try:
            open("data/x.txt", "w").write("no")
            print("WROTE")
        except OSError as exc:
            print("blocked", type(exc).__name__)
        open("ok.txt", "w").write("yes")
        """,
    )
    (job.workdir / "data").mkdir()
    job = dataclasses.replace(job, readonly=(job.workdir / "data",))
    with LocalExecutor(LocalExecutorConfig(sandbox="bwrap")) as ex:
        result, out, err = run(ex, job)
    assert result.ok, err
    assert out.startswith("blocked") and not (job.workdir / "data" / "x.txt").exists()
    assert (job.workdir / "ok.txt").exists()


@needs_bwrap
def test_binary_outside_sandbox_is_a_clear_error(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    tool = hidden / "tool.sh"
    tool.write_text("#!/bin/sh\necho hi\n")
    tool.chmod(0o755)
    job = make_job(tmp_path, "")
    job = dataclasses.replace(job, argv=(str(tool),))
    with LocalExecutor(LocalExecutorConfig(sandbox="bwrap")) as ex:
        result = ex.submit(job).result(timeout=30)
    assert "not visible inside the sandbox" in result.error


def _fake_job(tmp_path: Path, **fields: object) -> Job:
    (tmp_path / "w").mkdir(exist_ok=True)
    return Job(argv=("true",), workdir=tmp_path / "w", stdout_path=tmp_path / "o",
               stderr_path=tmp_path / "e", timeout_s=1, **fields)  # type: ignore[arg-type]


def test_layout_binds_an_allowlist_not_the_root(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    job = _fake_job(tmp_path, readonly=(data,), writable=(tmp_path,))
    argv = sandbox_mod.sandbox_layout(job).argv("bwrap", job.workdir)
    pairs = list(zip(argv, argv[1:], argv[2:]))
    ro = {src for flag, src, dst in pairs if flag == "--ro-bind" and src == dst}
    rw = {src for flag, src, dst in pairs if flag == "--bind" and src == dst}
    assert "/" not in ro and "/usr" in ro and "/etc/ld.so.cache" in ro
    assert "/etc" not in ro and "/opt" not in ro, "whole /etc and /opt are never bound"
    layout = sandbox_mod.sandbox_layout(job)
    assert not layout.exposes("/etc/shadow") and layout.exposes("/etc/passwd")
    assert sys.prefix in ro or any(sys.prefix.startswith(r + "/") for r in ro)
    assert str(data) in ro and str(job.workdir) in rw and str(tmp_path) in rw
    for flag in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"):
        assert flag in argv
    assert ("--ro-bind", "/proc/sys", "/proc/sys") in pairs
    # /tmp is mounted before any bind, so paths under /tmp (like this test's) are bound on top.
    tmpfs_at = next(i for i, (a, b) in enumerate(zip(argv, argv[1:])) if (a, b) == ("--tmpfs", "/tmp"))
    assert all(i > tmpfs_at for i, a in enumerate(argv) if a in ("--bind", "--ro-bind") and argv[i + 1] != "/proc/sys")
    # every parent of a bind that the sandbox has to create is world-searchable (not bwrap's 0700)
    made = {b for a, b in zip(argv, argv[1:]) if a == "--dir"}
    assert str(tmp_path) not in made and str(tmp_path.parent) in made
    for i, a in enumerate(argv):
        if a == "--dir":
            assert argv[i - 2:i] == ["--perms", "0755"]
    # A writable parent comes before the deeper binds inside it.
    assert argv.index(str(tmp_path)) < argv.index(str(job.workdir))
    assert argv[argv.index("--chdir") + 1] == str(job.workdir)


def test_sandbox_mode_resolution(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    assert LocalExecutor(LocalExecutorConfig(sandbox="none")).sandbox_mode == "none"
    with pytest.raises(UserError):
        LocalExecutor(LocalExecutorConfig(sandbox="docker"))

    monkeypatch.setattr(sandbox_mod, "bwrap_candidates", lambda configured: ["/nonexistent/bwrap"])
    with pytest.raises(UserError, match="bubblewrap"):
        LocalExecutor(LocalExecutorConfig(sandbox="bwrap"))
    with caplog.at_level(logging.WARNING):
        ex = LocalExecutor(LocalExecutorConfig(sandbox="auto"))
    assert ex.sandbox_mode == "none"
    assert "SANDBOX DISABLED" in caplog.text
    ex.shutdown()


@needs_bwrap
def test_bwrap_search_order_prefers_config_then_package(tmp_path: Path) -> None:
    bundled = sandbox_mod._bundled_bwrap()
    assert sandbox_mod.bwrap_candidates("/opt/custom/bwrap")[0] == "/opt/custom/bwrap"
    if bundled:
        assert sandbox_mod.bwrap_candidates(None)[0] == bundled
    # A broken configured path is skipped in auto mode, with a warning, for the next candidate.
    ex = LocalExecutor(LocalExecutorConfig(sandbox="auto", bwrap=str(tmp_path / "nope")))
    assert ex.sandbox_mode == "bwrap"
    ex.shutdown()


def test_config_is_a_valid_structured_config(tmp_path: Path) -> None:
    from omegaconf import OmegaConf

    cfg = OmegaConf.merge(OmegaConf.structured(LocalExecutorConfig), {"gpus": [0, 1], "sandbox": "none"})
    ex = LocalExecutor(cfg, gpu_devices=fake_devices(tmp_path, 2))  # type: ignore[arg-type]
    assert ex.capacity == 2 and ex.sandbox_mode == "none"
    ex.shutdown()
    assert LocalExecutor(LocalExecutorConfig(sandbox="none", max_parallel=3)).capacity == 3


# -- CPU-time limits ---------------------------------------------------------------------------

# (sandbox, use_cgroups): the cgroup's CPU accounting and the /proc reading of the job's processes
METERS = [pytest.param("bwrap", True, marks=[needs_bwrap, needs_cgroups], id="bwrap-cgroup"),
          pytest.param("bwrap", False, marks=needs_bwrap, id="bwrap-proc"),
          pytest.param("none", False, id="none-proc")]

WORK_THEN_EXIT = """
    import os, sys, time
    os.sched_setaffinity(0, {int(sys.argv[1])})  # the hog's core
    while time.process_time() < float(sys.argv[2]):
        pass
    print("done", time.process_time(), flush=True)
"""


@pytest.fixture
def cpu_hog() -> Iterator[int]:
    """Two busy processes pinned to one of our cores, for the duration of a test; yields that core. Two, so
    that the job gets about a third of the core even where the scheduler favours a newly started process
    (with one hog a 1 s job finished in 1.3 s on an idle machine)."""
    core = min(os.sched_getaffinity(0))
    spin = f"import os\nos.sched_setaffinity(0, {{{core}}})\nprint('spinning', flush=True)\nwhile True: pass"
    hogs = [subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE) for _ in range(2)]
    try:
        for hog in hogs:  # busy before the job starts
            assert hog.stdout is not None and hog.stdout.readline() == b"spinning\n"
        yield core
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


@pytest.mark.parametrize("sandbox,use_cgroups", [METERS[0], METERS[2]])
def test_a_job_slowed_by_a_cpu_hog_is_not_killed(tmp_path: Path, cpu_hog: int, sandbox: str,
                                                  use_cgroups: bool) -> None:
    """Sharing its core with a hog, a job needs more wall time than its CPU limit, and is not killed for
    it; a job that needs more CPU time than its limit is, with the CPU reason."""
    with LocalExecutor(LocalExecutorConfig(sandbox=sandbox), use_cgroups=use_cgroups) as ex:
        slowed, out, err = run(ex, make_job(tmp_path, WORK_THEN_EXIT, str(cpu_hog), "1.0", name="fits", timeout_s=1.5))
        assert slowed.ok, (slowed, err)
        # the job waited for its core (the hog's): wall time well beyond its CPU time, and no kill for it
        assert slowed.seconds > slowed.cpu_seconds + 0.3, "the hog did not slow the job (it shares the hog's core)"
        assert slowed.clock == "cpu" and slowed.cpu_seconds < 1.5
        assert float(out.split()[1]) <= slowed.cpu_seconds + 0.05  # what the job measured of itself

        over, out, _ = run(ex, make_job(tmp_path, WORK_THEN_EXIT, str(cpu_hog), "1000", name="over", timeout_s=1.5))
        assert over.timed_out and over.over_cpu_limit and over.exit_code is None and "done" not in out
        assert over.cpu_seconds >= 1.5
        assert over.time_problem(1.5) == f"over the CPU-time limit of 1.5 s (used {over.cpu_seconds:.1f} s)"


@pytest.mark.parametrize("sandbox,use_cgroups", METERS[1:])
def test_cpu_time_of_forked_workers_is_summed_without_cgroups(tmp_path: Path, sandbox: str,
                                                              use_cgroups: bool) -> None:
    """RLIMIT_CPU is per process; two busy workers under a sleeping parent reach the job's limit together."""
    job = make_job(tmp_path, """
        import os, time
        for _ in range(2):
            if os.fork() == 0:
                while True:
                    time.process_time()
        time.sleep(10 ** 6)
    """, timeout_s=2.0)
    with LocalExecutor(LocalExecutorConfig(sandbox=sandbox), use_cgroups=use_cgroups) as ex:
        result, _, _ = run(ex, job)
    assert result.over_cpu_limit and result.cpu_seconds >= 2.0


def test_cpu_time_of_an_escaped_process_counts_without_sandbox_or_cgroups(tmp_path: Path) -> None:
    """A setsid double fork leaves the process tree; the job's environment marker still finds it."""
    job = make_job(tmp_path, """
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                while True:
                    time.process_time()
            os._exit(0)
        time.sleep(10 ** 6)
    """, timeout_s=2.0)
    with LocalExecutor(LocalExecutorConfig(sandbox="none"), use_cgroups=False) as ex:
        result, _, _ = run(ex, job)
    assert result.over_cpu_limit and result.cpu_seconds >= 2.0


@pytest.mark.parametrize("sandbox,use_cgroups", METERS)
def test_files_a_job_holds_are_counted_in_its_resources(tmp_path: Path, sandbox: str, use_cgroups: bool) -> None:
    """A job that pins files while it sleeps costs little CPU; the peak it held is in its result."""
    job = make_job(tmp_path, """
        import os, time
        held = [open(os.devnull) for _ in range(150)]
        if os.fork() == 0:  # a child holds its own copies: the count spans the job's processes
            held += [open(os.devnull) for _ in range(100)]
            time.sleep(10 ** 6)
        time.sleep(4)
    """, timeout_s=30.0)
    with LocalExecutor(LocalExecutorConfig(sandbox=sandbox), use_cgroups=use_cgroups) as ex:
        result, _, err = run(ex, job)
    assert result.ok, (result, err)
    assert result.peak_open_files is not None and 400 <= result.peak_open_files < 600


def test_held_files_of_unreadable_processes_are_unknown_not_zero() -> None:
    gone = HeldFiles(lambda: [2 ** 22 + 1])  # above pid_max: no such process
    gone.sample()
    assert gone.peak is None
    mine = HeldFiles(lambda: [os.getpid(), 2 ** 22 + 1])
    mine.sample()
    assert mine.peak is not None and mine.peak >= 3


@pytest.mark.parametrize("sandbox", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_a_sleeping_job_is_caught_by_the_wall_backstop(tmp_path: Path, sandbox: str) -> None:
    cfg = LocalExecutorConfig(sandbox=sandbox, wall_backstop_factor=1.5, wall_backstop_s=1.0)
    with LocalExecutor(cfg) as ex:
        result, out, _ = run(ex, make_job(tmp_path, "import time\nprint('asleep', flush=True)\ntime.sleep(10 ** 6)",
                                          timeout_s=2.0))
    assert result.timed_out and not result.over_cpu_limit and result.exit_code is None and "asleep" in out
    assert result.clock == "cpu" and result.wall_limit_s == 4.0 and result.seconds >= 4.0
    assert result.cpu_seconds < 2.0
    assert result.time_problem(2.0).startswith("over the wall-clock backstop of 4 s (its CPU-time limit is 2 s; it used ")


@pytest.mark.parametrize("factor,seconds,refused", [
    (0.5, 60.0, "executor.wall_backstop_factor=0.5 is out of range: a number >= 1"),
    (4.0, -1.0, "executor.wall_backstop_s=-1 is out of range: a number >= 0"),
])
def test_backstop_config_is_validated(factor: float, seconds: float, refused: str) -> None:
    cfg = LocalExecutorConfig(sandbox="none", wall_backstop_factor=factor, wall_backstop_s=seconds)
    with pytest.raises(UserError, match=re.escape(refused)):
        LocalExecutor(cfg)


RLIMIT_REPORTER = "import resource; print(*resource.getrlimit(resource.RLIMIT_CPU))"


def test_gpu_jobs_keep_a_wall_clock_limit_and_cpu_jobs_get_rlimit_cpu(tmp_path: Path) -> None:
    """GPU time is not CPU time: a GPU job is limited by the wall clock, and no RLIMIT_CPU binds it."""
    with LocalExecutor(LocalExecutorConfig(sandbox="none", gpus=[0]), gpu_devices=fake_devices(tmp_path, 1)) as ex:
        gpu, out, _ = run(ex, make_job(tmp_path, RLIMIT_REPORTER, name="gpu", gpus=1, timeout_s=7.5))
        assert gpu.ok and gpu.clock == "wall" and gpu.wall_limit_s == 7.5
        assert out.split() == [str(v) for v in resource.getrlimit(resource.RLIMIT_CPU)]  # the harness's own
        busy, _, _ = run(ex, make_job(tmp_path, BUSY_FOREVER, name="busy", gpus=1, timeout_s=1.0))
        assert busy.timed_out and busy.clock == "wall" and not busy.over_cpu_limit
        assert busy.time_problem(1.0) == "over the wall-clock limit of 1 s (GPU job: GPU time is not CPU time)"
        cpu, out, _ = run(ex, make_job(tmp_path, RLIMIT_REPORTER, name="cpu", timeout_s=7.5))
        assert cpu.ok and cpu.clock == "cpu" and out.split() == ["15", "15"]  # 7.5 x 1.25 rounded up, + 5 s


def test_shutdown_kills_running_jobs(tmp_path: Path) -> None:
    ex = LocalExecutor(LocalExecutorConfig(sandbox="none"))
    started = tmp_path / "started"
    job = make_job(
        tmp_path, "import sys, time; open(sys.argv[1], 'w').close(); time.sleep(120)",
        str(started), timeout_s=120,
    )
    future = ex.submit(job)
    deadline = time.monotonic() + 20
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    t0 = time.monotonic()
    stopper = threading.Thread(target=ex.shutdown)
    stopper.start()
    stopper.join(timeout=30)
    result = future.result(timeout=1)
    assert "shut down" in result.error and not result.ok
    assert time.monotonic() - t0 < SLACK_S
    late = LocalExecutor(LocalExecutorConfig(sandbox="none"))
    late.shutdown()
    with pytest.raises(RuntimeError):
        late.submit(job)


@pytest.mark.parametrize("keep_pipes", ["0", "1"], ids=["daemonized", "holding-pipes"])
def test_background_writer_without_cgroups_or_sandbox(tmp_path: Path, keep_pipes: str) -> None:
    """With neither cgroups nor a pid namespace, a setsid escapee is still found and killed."""
    outdir = tmp_path / "out"
    outdir.mkdir()
    target = outdir / "late.txt"
    job = make_job(tmp_path, BACKGROUND_WRITER, str(target), keep_pipes, writable=(outdir,))
    with LocalExecutor(LocalExecutorConfig(sandbox="none"), use_cgroups=False) as ex:
        result, out, _ = run(ex, job)
    assert result.ok and "main done" in out
    time.sleep(2.2)
    assert not target.exists()


def test_relative_job_paths_are_a_clear_error(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rel").mkdir()
    with LocalExecutor(LocalExecutorConfig(sandbox="none")) as executor:
        result = executor.submit(Job(argv=(sys.executable, "-c", "pass"), workdir=Path("rel"),
                                     stdout_path=tmp_path / "o", stderr_path=tmp_path / "e", timeout_s=5)).result()
    assert result.error and "must be absolute" in result.error


# -- issue 5: what hostile jobs leave behind, and what the layout never shows ------------------------


@needs_bwrap
def test_dev_shm_is_bounded_without_cgroups(tmp_path: Path) -> None:
    job = make_job(tmp_path, """
        try:
            with open("/dev/shm/hog", "wb") as f:
                for _ in range(64):
                    f.write(b"x" * (8 << 20))
            print("WROTE 512 MB")
        except OSError as exc:
            print(type(exc).__name__, exc.errno)
    """, limits=Limits(memory_gb=0.25))
    with LocalExecutor(LocalExecutorConfig(sandbox="bwrap"), use_cgroups=False) as ex:
        result, out, err = run(ex, job)
    assert result.ok, err
    assert "WROTE" not in out and "28" in out  # ENOSPC at the tmpfs size


def test_a_full_disk_keeps_the_exit_code_and_removes_the_cgroup(executor: LocalExecutor, tmp_path: Path) -> None:
    before = _job_cgroups()
    base = make_job(tmp_path, "import sys\nprint('x' * 100000)\nsys.exit(3)")
    job = dataclasses.replace(base, stdout_path=Path("/dev/full"))
    result = executor.submit(job).result(timeout=60)
    assert result.exit_code == 3 and not result.error and result.stdout_truncated
    assert _job_cgroups() <= before


@needs_bwrap
def test_a_task_folder_inside_a_bound_dir_is_masked(tmp_path: Path) -> None:
    """A task installed as a package lives in site-packages, which jobs need: its folder is covered."""
    import sysconfig

    site = Path(sysconfig.get_paths()["purelib"])
    if not os.access(site, os.W_OK):
        pytest.skip("site-packages is not writable here")
    task_dir = site / f"rb_masked_task_{os.getpid()}"
    task_dir.mkdir()
    try:
        (task_dir / "evaluate.py").write_text("SECRET = 1\n")
        job = make_job(tmp_path, f"import os\nprint(sorted(os.listdir({str(task_dir)!r})))",
                       masked=(task_dir,), hidden=(task_dir,))
        with LocalExecutor(LocalExecutorConfig(sandbox="bwrap")) as ex:
            assert ex.exposure(job) == ""
            result, out, err = run(ex, job)
        assert result.ok, err
        assert out.strip() == "[]"
    finally:
        remove_tree(task_dir)


def test_layout_exposure_names_the_bound_dir(tmp_path: Path) -> None:
    job = _fake_job(tmp_path, hidden=(Path("/usr/local/share/rb-workspace/labels"),))
    problem = sandbox_mod.sandbox_layout(job).exposure(job.hidden)
    assert "/usr/local/share/rb-workspace/labels" in problem and "inside /usr" in problem
    assert sandbox_mod.sandbox_layout(job).exposure((tmp_path / "labels",)) == ""


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop happens only under a root harness")
def test_root_harness_runs_jobs_as_the_configured_uid(tmp_path: Path) -> None:
    job = make_job(tmp_path, "import os\nprint(os.getuid(), os.getgid(), os.getgroups())\nopen('w.txt', 'w')",
                   groups=(65533,))
    with LocalExecutor(LocalExecutorConfig(sandbox="bwrap", job_uid=4242, job_gid=4343)) as ex:
        result, out, err = run(ex, job)
    assert result.ok, err
    assert out.split()[:2] == ["4242", "4343"] and "65533" in out
    assert (job.workdir / "w.txt").stat().st_uid == 4242


def test_openmp_threads_wait_passively(tmp_path: Path) -> None:
    """Spinning OpenMP waiters multiply CPU and wall time when jobs share oversubscribed cores."""
    job = Job(argv=("true",), workdir=tmp_path, stdout_path=tmp_path / "o", stderr_path=tmp_path / "e", timeout_s=1)
    assert sandbox_mod.job_env(job, [], "id")["OMP_WAIT_POLICY"] == "PASSIVE"


def test_a_sigkill_no_limit_and_no_oom_kill_explains_is_said_to_come_from_outside(tmp_path: Path) -> None:
    """What the experiment reruns once (benchmark/run/experiment.py); a job's own limits never count as outside."""
    from researchbench.benchmark.executors.local.backend import host_oom_kills

    if host_oom_kills() is None:
        pytest.skip("/proc/vmstat does not count OOM kills here")
    with LocalExecutor(LocalExecutorConfig()) as ex:
        killed, _, _ = run(ex, make_job(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"))
        over, _, _ = run(ex, make_job(tmp_path, "while True:\n    pass\n", name="over", timeout_s=1.0))
        failed, _, _ = run(ex, make_job(tmp_path, "raise SystemExit(3)\n", name="failed"))
    assert killed.exit_code == -9 and killed.killed_from_outside
    assert over.over_cpu_limit and not over.killed_from_outside and not failed.killed_from_outside
