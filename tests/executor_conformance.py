"""The behaviour every executor backend owes the harness, as a reusable pytest base class.

A backend's test module subclasses `ExecutorConformance` and implements `make_executor()`:

    class TestModal(ExecutorConformance):
        isolated = True
        def make_executor(self) -> Executor:
            return ModalExecutor(ModalExecutorConfig(...))

Jobs are small Python scripts written into the job's workdir and run with `self.python`, the same
way agent code runs. `isolated = True` adds the sandbox checks (no hidden files, no network, no
writes outside the workspace); set it False only for an explicitly unsandboxed backend.
`cpu_time_limits = True` says the backend limits a GPU-less job's CPU time (summed over its processes)
rather than its wall-clock time; a wall-clock backend must say so (`clock` "wall", no `cpu_seconds`).
"""

from __future__ import annotations

import json
import socket
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from researchbench.benchmark.executors.base import CPU, WALL, Executor, Job, JobResult, Limits

REPO = Path(__file__).resolve().parents[1]
SLACK_S = 30.0  # "returned within timeout + slack": the alternative is never; a loaded machine starts jobs slowly


# The opening of a job that reports what hostile code was allowed to do: `attempt(fn)` runs fn and returns
# "ALLOWED", or the name of the OSError it raised. Job code follows it (dedented).
ATTEMPT_SOURCE = """\
import json, os
def attempt(fn):
    try:
        fn()
        return "ALLOWED"
    except OSError as exc:
        return type(exc).__name__
"""


def make_job(
    tmp_path: Path,
    code: str,
    *args: str,
    python: str = sys.executable,
    name: str = "job",
    timeout_s: float = 20.0,
    **fields: object,
) -> Job:
    """A job that runs `code` (dedented) as a script in its own fresh workdir under tmp_path."""
    base = tmp_path / name
    workdir = base / "work"
    workdir.mkdir(parents=True)
    (workdir / "main.py").write_text(textwrap.dedent(code))
    return Job(
        argv=(python, "main.py", *args),
        workdir=workdir,
        stdout_path=base / "stdout.txt",
        stderr_path=base / "stderr.txt",
        timeout_s=timeout_s,
        **fields,  # type: ignore[arg-type]
    )


def run(executor: Executor, job: Job) -> tuple[JobResult, str, str]:
    """Submit, wait (bounded: a CPU-time limit's wall-clock backstop is at most 4 x + 60 s by default),
    and return the result with both captured streams."""
    result = executor.submit(job).result(timeout=job.timeout_s * 4 + 120)
    out = job.stdout_path.read_text(errors="replace") if job.stdout_path.exists() else ""
    err = job.stderr_path.read_text(errors="replace") if job.stderr_path.exists() else ""
    return result, out, err


class LoopbackServer:
    """A TCP listener on the host's loopback that records whether anyone connected."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


BUSY_FOREVER = """
    import time
    print("busy", flush=True)
    while True:
        time.process_time()
"""

BACKGROUND_WRITER = """
    import os, sys, time
    target, keep_pipes = sys.argv[1], sys.argv[2] == "1"
    if os.fork() == 0:
        os.setsid()  # leave the job's process group and session
        if os.fork() == 0:
            if not keep_pipes:
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
            time.sleep(1.0)
            for _ in range(50):
                with open(target, "a") as f:
                    f.write("still alive\\n")
                time.sleep(0.1)
            os._exit(0)
        os._exit(0)
    time.sleep(0.3)
    print("main done", flush=True)
"""


class ExecutorConformance:
    """Subclass, implement `make_executor`, and the whole suite runs against that backend."""

    python: str = sys.executable
    isolated: bool = True  # the backend sandboxes files and network
    runs_on_harness_host: bool = True  # jobs share the harness's kernel and uids (False for remote backends)
    cpu_time_limits: bool = True  # timeout_s limits a GPU-less job's CPU time (False: wall-clock time)

    def make_executor(self) -> Executor:
        raise NotImplementedError

    @pytest.fixture
    def executor(self) -> Iterator[Executor]:
        ex = self.make_executor()
        try:
            yield ex
        finally:
            ex.shutdown()

    def job(self, tmp_path: Path, code: str, *args: str, **fields: object) -> Job:
        return make_job(tmp_path, code, *args, python=self.python, **fields)

    def require_isolation(self) -> None:
        if not self.isolated:
            pytest.skip("backend runs jobs unsandboxed")

    # -- basics ------------------------------------------------------------------------------

    def test_describes_itself(self, executor: Executor) -> None:
        assert executor.name
        assert executor.capacity >= 1
        assert executor.sandbox_mode in ("bwrap", "modal", "none")

    def test_exit_code_and_both_streams(self, executor: Executor, tmp_path: Path) -> None:
        job = self.job(tmp_path, """
            import sys
            print("to stdout")
            print("to stderr", file=sys.stderr)
            sys.exit(3)
        """)
        result, out, err = run(executor, job)
        assert result.exit_code == 3 and not result.timed_out and not result.error
        assert not result.ok
        assert out == "to stdout\n" and err == "to stderr\n"
        assert not result.stdout_truncated and not result.stderr_truncated

    def test_success_is_ok(self, executor: Executor, tmp_path: Path) -> None:
        result, out, _ = run(executor, self.job(tmp_path, "print('fine')"))
        assert result.ok and result.exit_code == 0 and out == "fine\n"
        assert result.seconds >= 0

    def test_killed_by_signal_is_negative(self, executor: Executor, tmp_path: Path) -> None:
        job = self.job(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
        result, _, _ = run(executor, job)
        assert result.exit_code == -9 and not result.timed_out

    def test_cwd_is_workdir_and_stdin_empty(self, executor: Executor, tmp_path: Path) -> None:
        job = self.job(tmp_path, "import os, sys; print(os.getcwd()); print(repr(sys.stdin.read()))")
        result, out, _ = run(executor, job)
        assert result.ok
        assert out.splitlines() == [str(job.workdir), "''"]

    def test_env_is_clean_plus_job_env(
        self, executor: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-parent-secret")
        monkeypatch.setenv("RESEARCHBENCH_SECRET_PROBE", "leaked")
        job = self.job(
            tmp_path,
            "import json, os; print(json.dumps(dict(os.environ)))",
            env={"MY_SETTING": "42"},
            limits=Limits(cpus=3),
        )
        result, out, _ = run(executor, job)
        assert result.ok
        env = json.loads(out)
        assert env["MY_SETTING"] == "42"
        assert "OPENAI_API_KEY" not in env and "ANTHROPIC_API_KEY" not in env
        assert "RESEARCHBENCH_SECRET_PROBE" not in env
        assert not any("secret" in v for v in env.values())
        assert env["HOME"] == "/tmp" and env["TMPDIR"] == "/tmp"
        assert env["OMP_NUM_THREADS"] == "3" and env["MKL_NUM_THREADS"] == "3"
        assert env["CUDA_VISIBLE_DEVICES"] == ""
        assert env["PYTHONDONTWRITEBYTECODE"] == "1"

    def test_missing_binary_is_an_error_result(self, executor: Executor, tmp_path: Path) -> None:
        job = self.job(tmp_path, "")
        job = Job(
            argv=("researchbench-no-such-binary-xyz", "--flag"),
            workdir=job.workdir,
            stdout_path=job.stdout_path,
            stderr_path=job.stderr_path,
            timeout_s=5,
        )
        result = executor.submit(job).result(timeout=60)
        assert result.error and "researchbench-no-such-binary-xyz" in result.error
        assert not result.ok and not result.timed_out

    def test_missing_workdir_is_an_error_result(self, executor: Executor, tmp_path: Path) -> None:
        job = Job(
            argv=(self.python, "-c", "pass"),
            workdir=tmp_path / "does-not-exist",
            stdout_path=tmp_path / "o.txt",
            stderr_path=tmp_path / "e.txt",
            timeout_s=5,
        )
        result = executor.submit(job).result(timeout=60)
        assert result.error and not result.ok

    # -- timeouts and leftovers -----------------------------------------------------------

    def test_timeout_kills_the_whole_tree(self, executor: Executor, tmp_path: Path) -> None:
        marker = tmp_path / "out" / "child-wrote.txt"
        marker.parent.mkdir()
        job = self.job(
            tmp_path,
            """
            import subprocess, sys, time
            # A child in the same group that writes as soon as its parent is gone, should it survive it.
            subprocess.Popen([sys.executable, "-c",
                "import os, sys, time\\nparent = os.getppid()\\nwhile os.getppid() == parent: time.sleep(0.05)\\n"
                "open(sys.argv[1], 'w').write('x')", sys.argv[1]])
            print("computing", flush=True)
            while True:  # busy, so a CPU-time limit and a wall-clock one both end it
                time.process_time()
            """,
            str(marker),
            timeout_s=1.0,
            writable=(marker.parent,),
        )
        result, out, _ = run(executor, job)
        assert result.timed_out and result.exit_code is None and not result.ok
        assert "computing" in out
        time.sleep(1.0)
        assert not marker.exists(), "a child of the timed-out job survived it"

    def test_time_limit_is_on_the_backends_clock(self, executor: Executor, tmp_path: Path) -> None:
        result, _, _ = run(executor, self.job(tmp_path, BUSY_FOREVER, timeout_s=1.0))
        assert result.timed_out and not result.ok
        if self.cpu_time_limits:
            assert result.clock == CPU and result.over_cpu_limit
            assert result.cpu_seconds is not None and result.cpu_seconds >= 1.0
            assert result.time_problem(1.0).startswith("over the CPU-time limit of 1 s (used ")
        else:
            assert result.clock == WALL and not result.over_cpu_limit and result.cpu_seconds is None
            why = f" ({result.limit_why})" if result.limit_why else ""  # the backend's reason, when it gives one
            assert result.time_problem(1.0) == f"over the wall-clock limit of 1 s{why}"

    def test_cpu_time_is_summed_over_processes(self, executor: Executor, tmp_path: Path) -> None:
        """Two busy children, the parent asleep: no process reaches the limit alone (RLIMIT_CPU would
        not fire), their sum does."""
        job = self.job(tmp_path, """
            import os, time
            for _ in range(2):
                if os.fork() == 0:
                    while True:
                        time.process_time()
            time.sleep(10 ** 6)
        """, timeout_s=2.0)
        result, _, _ = run(executor, job)
        assert result.timed_out and not result.ok
        if self.cpu_time_limits:
            assert result.over_cpu_limit and result.cpu_seconds is not None and result.cpu_seconds >= 2.0

    def test_cpu_seconds_of_a_finished_job(self, executor: Executor, tmp_path: Path) -> None:
        """What the job measured of its own CPU time is a lower bound of what the backend reports."""
        job = self.job(tmp_path, """
            import time
            while time.process_time() < 0.5:
                pass
            print(time.process_time())
        """)
        result, out, _ = run(executor, job)
        assert result.ok
        if self.cpu_time_limits:
            assert result.cpu_seconds is not None and result.cpu_seconds >= float(out) - 0.05
        else:
            assert result.cpu_seconds is None

    @pytest.mark.parametrize("keep_pipes", [False, True], ids=["daemonized", "holding-pipes"])
    def test_background_process_dies_with_job(
        self, executor: Executor, tmp_path: Path, keep_pipes: bool
    ) -> None:
        outdir = tmp_path / "outdir"
        outdir.mkdir()
        target = outdir / "written-after-job.txt"
        job = self.job(
            tmp_path, BACKGROUND_WRITER, str(target), "1" if keep_pipes else "0",
            writable=(outdir,), timeout_s=30,
        )
        t0 = time.monotonic()
        result, out, _ = run(executor, job)
        assert result.exit_code == 0 and "main done" in out
        assert time.monotonic() - t0 < 1.0 + SLACK_S  # did not wait for the escapee
        time.sleep(2.2)
        assert not target.exists(), "a setsid double-forked process outlived its job"

    def test_next_job_runs_after_a_timeout(self, executor: Executor, tmp_path: Path) -> None:
        slow = self.job(tmp_path, BUSY_FOREVER, name="slow", timeout_s=0.5)
        assert run(executor, slow)[0].timed_out
        result, out, _ = run(executor, self.job(tmp_path, "print('next')", name="next"))
        assert result.ok and out == "next\n"

    # -- output capture ------------------------------------------------------------------

    def test_output_cap_keeps_head_and_tail(self, executor: Executor, tmp_path: Path) -> None:
        cap = 10_000
        job = self.job(
            tmp_path,
            """
            import sys
            print("FIRST LINE")
            for i in range(20000):
                print(f"line {i:06d} " + "x" * 40)
            print("Traceback: the interesting end", file=sys.stderr)
            print("LAST LINE")
            """,
            output_cap_bytes=cap,
        )
        result, out, err = run(executor, job)
        assert result.ok
        assert result.stdout_truncated and not result.stderr_truncated
        assert job.stdout_path.stat().st_size <= cap
        assert out.startswith("FIRST LINE\n") and out.endswith("LAST LINE\n")
        assert "bytes dropped" in out
        assert err == "Traceback: the interesting end\n"

    # -- paths ---------------------------------------------------------------------------

    def test_readonly_and_writable_paths(self, executor: Executor, tmp_path: Path) -> None:
        data = tmp_path / "data"
        data.mkdir()
        (data / "train.csv").write_text("a,b\n1,2\n")
        outdir = tmp_path / "outdir"
        outdir.mkdir()
        job = self.job(
            tmp_path,
            """
            import sys
            data, outdir = sys.argv[1], sys.argv[2]
            print(open(data + "/train.csv").read().splitlines()[1])
            open(outdir + "/pred.txt", "w").write("ok")
            open("in_workdir.txt", "w").write("ok")
            open("/tmp/scratch.txt", "w").write("ok")
            """,
            str(data), str(outdir),
            readonly=(data,), writable=(outdir,),
        )
        result, out, err = run(executor, job)
        assert result.ok, err
        assert out == "1,2\n"
        assert (outdir / "pred.txt").read_text() == "ok"
        assert (job.workdir / "in_workdir.txt").read_text() == "ok"

    # -- the task runtime ---------------------------------------------------------------------

    def test_jobs_import_the_task_runtime_and_cannot_change_it(self, executor: Executor, tmp_path: Path) -> None:
        """Drivers and evaluators import task_runtime on every backend; a sandboxed job cannot edit it."""
        import researchbench.task_runtime as task_runtime

        source = Path(task_runtime.__file__)
        before = source.read_bytes()
        job = self.job(tmp_path, """
            import pathlib, sys, task_runtime
            print(task_runtime.read_params.__name__, task_runtime.__name__)
            if sys.argv[1] == "try-write":
                for path in (pathlib.Path(task_runtime.__file__), pathlib.Path(task_runtime.__file__).with_name("x.py")):
                    try:
                        path.write_text("broken = True\\n")
                        print("wrote", path.name)
                    except OSError as exc:
                        print("refused", type(exc).__name__)
        """, "try-write" if self.isolated else "read-only")
        result, out, err = run(executor, job)
        assert result.ok, err
        lines = out.splitlines()
        assert lines[0] == "read_params task_runtime"
        if self.isolated:
            assert len(lines) == 3 and all(line.startswith("refused ") for line in lines[1:]), out
        assert source.read_bytes() == before and not source.with_name("x.py").exists()

    # -- isolation (sandboxed backends) --------------------------------------------------

    def test_hidden_files_are_absent(self, executor: Executor, tmp_path: Path) -> None:
        self.require_isolation()
        hidden = tmp_path / "hidden"
        hidden.mkdir()
        (hidden / "test_labels.csv").write_text("SECRET-LABELS\n")
        job = self.job(
            tmp_path,
            """
            import os, sys
            for path in sys.argv[1:]:
                try:
                    print(path, "LEAKED", open(path).read().strip())
                except OSError as exc:
                    print(path, "blocked", type(exc).__name__)
            """,
            str(hidden / "test_labels.csv"), str(REPO / "pyproject.toml"),
        )
        result, out, err = run(executor, job)
        assert result.ok, err
        assert "LEAKED" not in out and "SECRET" not in out
        assert out.count("blocked") == 2

    def test_no_writes_outside_workspace(self, executor: Executor, tmp_path: Path) -> None:
        self.require_isolation()
        hidden = tmp_path / "hidden"
        hidden.mkdir()
        targets = [
            hidden / "planted.txt",
            REPO / "sandbox_escape_probe.txt",
            Path(sys.prefix) / "sandbox_escape_probe.txt",
            Path("/etc/sandbox_escape_probe.txt"),
        ]
        job = self.job(
            tmp_path,
            """
            import sys
            for path in sys.argv[1:]:
                try:
                    open(path, "w").write("escaped")
                    print(path, "WROTE")
                except OSError as exc:
                    print(path, "blocked", type(exc).__name__)
            """,
            *map(str, targets),
        )
        try:
            result, out, err = run(executor, job)
            assert result.ok, err
            # A path under /tmp can land on the sandbox's private tmpfs (e.g. a repo cloned under /tmp
            # has its parent dirs recreated there to hold a bound venv); what matters is the host.
            wrote = [line.split()[0] for line in out.splitlines() if line.endswith("WROTE")]
            assert all(w.startswith("/tmp/") for w in wrote), out
            assert len(wrote) + out.count("blocked") == len(targets)
            for path in targets:
                assert not path.exists(), f"job wrote {path} on the host"
        finally:
            for path in targets:
                if path.exists():
                    path.unlink()

    def test_no_network(self, executor: Executor, tmp_path: Path) -> None:
        self.require_isolation()
        server = LoopbackServer()
        try:
            job = self.job(
                tmp_path,
                """
                import socket, sys
                port = int(sys.argv[1])
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=3).close()
                    print("CONNECTED")
                except OSError as exc:
                    print("connect blocked", type(exc).__name__)
                try:
                    socket.getaddrinfo("pypi.org", 443)
                    print("RESOLVED")
                except OSError as exc:
                    print("dns blocked", type(exc).__name__)
                """,
                str(server.port),
            )
            result, out, err = run(executor, job)
        finally:
            server.close()
        assert result.ok, err
        assert "connect blocked" in out and "dns blocked" in out
        assert server.connections == 0

    def test_sees_only_its_own_processes(self, executor: Executor, tmp_path: Path) -> None:
        self.require_isolation()
        job = self.job(
            tmp_path, "import os; print(sum(n.isdigit() for n in os.listdir('/proc')))"
        )
        result, out, err = run(executor, job)
        assert result.ok, err
        assert int(out) <= 5  # the job, its init, nothing of the host


    # -- privilege, disk and layout (agent code is hostile) --------------------------------------

    def test_no_privilege_over_the_host(self, executor: Executor, tmp_path: Path) -> None:
        """No capabilities, kernel.core_pattern not writable (opened, never written), no /etc/shadow."""
        self.require_isolation()
        job = self.job(tmp_path, ATTEMPT_SOURCE + textwrap.dedent("""
            caps = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
            print(json.dumps({
                "uid": os.getuid(), "caps": int(caps, 16),
                "core_pattern": attempt(lambda: os.close(os.open("/proc/sys/kernel/core_pattern", os.O_WRONLY))),
                "sysrq": attempt(lambda: os.close(os.open("/proc/sys/kernel/sysrq", os.O_WRONLY))),
                "shadow": attempt(lambda: open("/etc/shadow").read()),
            }))
        """))
        result, out, err = run(executor, job)
        assert result.ok, err
        seen = json.loads(out)
        assert seen["caps"] == 0
        assert seen["core_pattern"] != "ALLOWED" and seen["sysrq"] != "ALLOWED"
        assert seen["shadow"] != "ALLOWED"
        if self.runs_on_harness_host:
            assert seen["uid"] != 0, "agent code runs as root on the host"

    def test_disk_use_over_the_limit_kills_the_job(self, executor: Executor, tmp_path: Path) -> None:
        job = self.job(tmp_path, """
            import time
            for i in range(200):
                with open(f"fill{i}", "wb") as f:
                    f.write(b"x" * (1 << 20))
            time.sleep(600)
        """, disk_bytes=20 << 20, timeout_s=600)
        t0 = time.monotonic()
        result, _, _ = run(executor, job)
        assert result.violation and "disk" in result.violation and not result.ok
        assert time.monotonic() - t0 < 120, "the job must be stopped when it goes over, not at its timeout"

    def test_hidden_path_inside_a_visible_dir_refuses_the_job(self, executor: Executor, tmp_path: Path) -> None:
        self.require_isolation()
        base = self.job(tmp_path, "print('ran')")
        secret = base.workdir / "labels"
        secret.mkdir()
        job = Job(argv=base.argv, workdir=base.workdir, stdout_path=base.stdout_path,
                  stderr_path=base.stderr_path, timeout_s=10, hidden=(secret,))
        assert executor.exposure(job)
        result = executor.submit(job).result(timeout=60)
        assert result.error and "would be visible" in result.error and not result.ok
        assert not executor.exposure(Job(argv=base.argv, workdir=base.workdir, stdout_path=base.stdout_path,
                                         stderr_path=base.stderr_path, timeout_s=10, hidden=(tmp_path / "x",)))
