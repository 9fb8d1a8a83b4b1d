"""The job's own filesystem (benchmark/executors/local/job_fs.py), attacked through the real local executor.

A relocated job (one with `Job.places`, as every phase job and agent command has) sees only fixed
paths, and its writable dirs live on a tmpfs capped at the task's disk limit: a write past the
limit fails when it is made, whatever shape the bytes take, and nothing reaches the host disk but
the bounded copy of the output dir after the job.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from researchbench.benchmark.executors.base import Job
from researchbench.benchmark.executors.local import LocalExecutor
from researchbench.benchmark.executors.local.job_fs import place_of, relocate_arg
from researchbench.benchmark.run.experiment import OUTPUT_PLACE, run_phase
from conftest import REPO
from test_executor_local import HAS_CGROUPS

CAP = 32 << 20  # the disk limit of the jobs below


@pytest.fixture(scope="module")
def executor():
    ex = LocalExecutor()
    if ex.sandbox_mode != "bwrap" or not ex.relocates:
        ex.shutdown()
        pytest.skip("needs bubblewrap with --size (0.9 or later)")
    yield ex
    ex.shutdown()


def relocated_job(tmp_path: Path, code: str, disk_bytes: int = CAP, **fields: object) -> Job:
    """A job laid out like a phase job: code at /job/code (its cwd), output at /job/out, data at /job/data."""
    code_dir, out, data = tmp_path / "code", tmp_path / "out", tmp_path / "data"
    for d in (code_dir, out, data):
        d.mkdir(parents=True)
    (data / "train.csv").write_text("a,b\n1,2\n")
    (code_dir / "main.py").write_text(textwrap.dedent(code))
    return Job(argv=(sys.executable, "main.py", "--data", str(data), f"--out={out}"), workdir=code_dir,
               stdout_path=tmp_path / "stdout.txt", stderr_path=tmp_path / "stderr.txt", timeout_s=60,
               readonly=(data,), writable=(out,), disk_bytes=disk_bytes,
               places=((code_dir, "/job/code"), (out, "/job/out"), (data, "/job/data")), **fields)  # type: ignore[arg-type]


def run(executor: LocalExecutor, job: Job):
    result = executor.submit(job).result(timeout=600)
    return result, job.stdout_path.read_text(errors="replace"), job.stderr_path.read_text(errors="replace")


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def test_places_in_argv_are_rewritten_only_at_path_boundaries() -> None:
    places = {"/r/s/code": "/job/code", "/r/s/code/sub": "/job/sub", "/data": "/job/data"}
    assert place_of("/r/s/code/driver.py", places) == "/job/code/driver.py"
    assert place_of("/r/s/code/sub/x", places) == "/job/sub/x"  # the longest host path wins
    assert place_of("/r/s/codex", places) == "/r/s/codex"
    assert relocate_arg("--out=/data/y", places) == "--out=/job/data/y"
    assert relocate_arg("/data", places) == "/job/data" and relocate_arg("x=/datab", places) == "x=/datab"


def test_fallocate_far_over_the_cap_fails_in_the_job_and_the_host_disk_is_untouched(executor, tmp_path: Path) -> None:
    before = free_bytes(tmp_path)
    job = relocated_job(tmp_path, """
        import errno, json, os
        fd = os.open("/job/out/big", os.O_CREAT | os.O_WRONLY)
        try:
            os.posix_fallocate(fd, 0, 2 << 30)  # 64 x the cap (20 GiB would meet RLIMIT_FSIZE first: EFBIG)
            got = "allocated"
        except OSError as exc:
            got = errno.errorcode[exc.errno]
        print(json.dumps({"fallocate": got, "free": os.statvfs("/job").f_bavail * os.statvfs("/job").f_frsize}))
    """)
    result, out, err = run(executor, job)
    assert result.exit_code == 0, err
    seen = json.loads(out)
    assert seen["fallocate"] in ("ENOSPC", "EDQUOT") and seen["free"] > CAP // 2  # refused whole, nothing kept
    assert before - free_bytes(tmp_path) < CAP + (8 << 20)
    assert (tmp_path / "out" / "big").stat().st_size == 0


FILL = {
    "sparse file": """
        f = open("/job/out/sparse", "wb")
        f.truncate(2 << 30)  # a hole costs nothing; the pages written into it do
        while True:
            f.seek(stored * 97)
            f.write(b"x" * (1 << 20)); f.flush()
            stored += 1 << 20
    """,
    "many small files": """
        stored = 0
        while True:
            with open(f"f{stored}", "wb") as f:  # in the code dir, the job's cwd: it counts too
                f.write(b"x")
            stored += 1
    """,
    "hard links": """
        stored = 0
        with open("/job/out/a", "wb") as f:
            f.write(b"x" * (20 << 20))
        for i in range(50):  # fifty names, one copy of the data
            os.link("/job/out/a", f"/job/out/a{i}")
        with open("/job/out/b", "wb") as f:
            while True:
                f.write(b"y" * (1 << 20)); f.flush()
                stored += 1 << 20
    """,
    "deep tree": """
        stored = 0
        while True:
            os.mkdir("d"); os.chdir("d")
            with open("f", "wb") as f:
                f.write(b"x" * (64 << 10))
            stored += 1
    """,
}


@pytest.mark.parametrize("shape", FILL)
def test_every_shape_of_bytes_counts_against_the_cap(executor, tmp_path: Path, shape: str) -> None:
    code = "import errno, os, sys\nstored = 0\ntry:\n" + textwrap.indent(textwrap.dedent(FILL[shape]), "    ") + \
        "\nexcept OSError as exc:\n    print(errno.errorcode[exc.errno], stored, flush=True)\n    sys.exit(3)\n"
    before = free_bytes(tmp_path)
    result, out, err = run(executor, relocated_job(tmp_path, code))
    assert out.split()[0] == "ENOSPC", (out, err)
    assert result.exit_code == 3 and "over the disk limit" in result.violation, result
    assert before - free_bytes(tmp_path) < CAP + (8 << 20)  # the output dir came back, bounded by the cap


def test_a_run_says_over_the_disk_limit(toy, executor, tmp_path: Path) -> None:
    """Through run_phase (what the engine records): a refused fallocate and a filled disk both say so."""
    refused = 'import os\nos.posix_fallocate(os.open("big", os.O_CREAT | os.O_WRONLY), 0, 2 << 30)\n'
    filled = 'import os\nwith open("fill", "wb") as f:\n    while True:\n        f.write(b"x" * (1 << 20))\n'
    for name, body in (("refused", refused), ("filled", filled)):
        outcome = run_phase(toy, {"model.py": body}, "val", executor, tmp_path / name / "scratch", 60)
        assert "over the disk limit" in outcome.bug_reason and "resources.disk_gb" in outcome.bug_reason, \
            (name, outcome.bug_reason)


def test_the_harness_survives_host_enospc_on_copy_back(executor, tmp_path: Path, monkeypatch) -> None:
    import researchbench.benchmark.executors.remote_files as remote_files

    def disk_full(*_args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(remote_files, "_write_file", disk_full)
    job = relocated_job(tmp_path, """
        import sys
        open("/job/out/pred.txt", "w").write("ok")
        print("the job's own output")
        sys.exit(3)
    """)
    result, out, _ = run(executor, job)
    assert result.exit_code == 3 and out == "the job's own output\n"
    assert "could not copy" in result.error and "No space left" in result.error and not result.ok
    assert not (tmp_path / "out" / "pred.txt").exists()


def test_the_output_dir_comes_back_as_plain_files_only(executor, tmp_path: Path) -> None:
    job = relocated_job(tmp_path, """
        import os
        os.makedirs("/job/out/sub")
        open("/job/out/sub/pred.txt", "w").write("ok")
        os.symlink("/etc/passwd", "/job/out/link")
        os.mkfifo("/job/out/fifo")
        open("/job/code/scratch.txt", "w").write("the code dir stays in the sandbox")
    """)
    result, _, err = run(executor, job)
    assert result.ok, (result, err)
    out = tmp_path / "out"
    assert (out / "sub" / "pred.txt").read_text() == "ok"
    assert os.readlink(out / "link") == "/dev/null"  # an inert stand-in: the harness names it, never follows it
    assert not (tmp_path / "code" / "scratch.txt").exists()


def _host_paths(*paths: Path) -> list[str]:
    """Host paths a job must not see; the interpreter is bound at its own path, so a venv inside the
    repo would show the repo's path through sys.executable alone (docs/security.md)."""
    prefixes = [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, os.path.dirname(sys.executable))]
    return [str(p) for p in paths if not any(pre.startswith(str(p)) for pre in prefixes)]


def test_a_job_sees_no_host_path(toy, executor, tmp_path: Path) -> None:
    """cwd, argv, /proc/1/cmdline, a traceback and the feedback the agent gets name fixed paths only."""
    model = '''
import os, sys
print("cwd", os.getcwd())
print("argv", sys.argv)
print("pid1", open("/proc/1/cmdline", "rb").read().replace(b"\\0", b" ").decode())
print("self", open("/proc/self/cmdline", "rb").read().replace(b"\\0", b" ").decode())
print("env", dict(os.environ))
print("wrote", os.path.join(sys.argv[sys.argv.index("--out") + 1], "predictions.json"))
raise RuntimeError("a traceback")
'''
    scratch = tmp_path / "results" / "scratch" / "0001"
    outcome = run_phase(toy, {"model.py": model}, "val", executor, scratch, 60)
    text = outcome.stdout.decode() + outcome.stderr.decode() + outcome.bug_reason
    assert "a traceback" in text and "cwd /job/code" in text and f"wrote {OUTPUT_PLACE}/predictions.json" in text
    assert 'File "/job/code/model.py"' in text
    for host in _host_paths(tmp_path, toy.root, toy.public_dir, toy.spec.task_dir, REPO):
        assert host not in text, host


def _within(root: str, host: Path) -> bool:
    """Whether mountinfo's `root` (a path relative to its filesystem's root, so a tail of the host path where
    the host dir sits on a mount of its own) is `host` or lies inside it."""
    parts = host.parts[1:]
    tails = ["/" + "/".join(parts[i:]) for i in range(len(parts) - 1)]
    return any(root == tail or root.startswith(tail + "/") for tail in tails)


MOUNTINFO = '''
import sys
print("MOUNTINFO-START")
print(open("/proc/self/mountinfo").read())
print("MOUNTINFO-END", flush=True)
def predict(x, params):
    return params["slope"] * x
'''


@pytest.mark.parametrize("phase", ["val", "test"])
def test_what_mountinfo_shows_a_job_is_exactly_what_docs_security_lists(toy, executor, tmp_path: Path,
                                                                        phase: str) -> None:
    """Issue 26: /proc/self/mountinfo names the host source of every bind. docs/security.md lists them: the
    system and interpreter dirs at their own paths, the public data, the test inputs (test phase), this
    step's code and output dirs (under the run's results), the harness-owned code files, the task runtime
    and the supervisor; never the labels, the task folder, the journal or another step."""
    from researchbench.benchmark.common.paths import task_runtime_dir
    from researchbench.benchmark.executors.local.job_fs import SUPERVISOR_FILE

    scratch = tmp_path / "results" / "scratch" / "0001"
    outcome = run_phase(toy, {"model.py": MOUNTINFO}, phase, executor, scratch, 60)
    text = outcome.stdout.decode()
    assert outcome.ok and "MOUNTINFO-END" in text, outcome.bug_reason
    table = text[text.index("MOUNTINFO-START"):text.index("MOUNTINFO-END")].splitlines()[1:]
    sources = {line.split()[3]: line.split()[4] for line in table if line.strip()}
    listed = [toy.public_dir, scratch / "code", scratch / "output", Path(task_runtime_dir()), Path(SUPERVISOR_FILE)]
    if phase == "test":
        listed.append(toy.test_inputs_dir)
    unlisted = {root: point for root, point in sources.items()
                if root not in ("/", "/null", "/newroot")  # tmpfs (bwrap's root, /tmp, masks), /dev/null on files
                and root not in (point, os.path.realpath(point))  # system and interpreter dirs at their own path
                and not point.startswith(("/dev/", "/proc/"))  # bwrap's device nodes and proc's own masks
                and not any(_within(root, host) for host in listed)}
    assert not unlisted, unlisted
    assert any(_within(root, toy.public_dir) for root in sources)  # shown, as the docs say
    everything = "\n".join(table)
    for never in (toy.labels_dir, toy.spec.task_dir, tmp_path / "results" / "journal.jsonl"):
        assert str(never) not in everything, never
    if phase == "val":
        assert str(toy.test_inputs_dir) not in everything


@pytest.mark.skipif(not HAS_CGROUPS, reason="no writable memory cgroup here")
def test_the_job_disk_is_charged_to_the_job_memory(executor, tmp_path: Path) -> None:
    """A tmpfs page is memory: with a cgroup, files and memory share resources.memory_gb."""
    from researchbench.benchmark.executors.base import Limits

    job = relocated_job(tmp_path, """
        with open("/job/out/big", "wb") as f:
            for _ in range(600):
                f.write(b"x" * (1 << 20))
        print("stored 600 MB in 400 MB of memory")
    """, disk_bytes=1 << 30, limits=Limits(memory_gb=0.4))
    result, out, _ = run(executor, job)
    assert result.exit_code == -9 and "stored" not in out  # the kernel's OOM killer, in the job's cgroup


def test_without_a_sandbox_the_placeholders_keep_their_host_paths(toy, tmp_path: Path) -> None:
    """sandbox=none cannot relocate: the job runs where the harness put it, and agents are told so."""
    from researchbench.benchmark.executors.local import LocalExecutorConfig
    from researchbench.benchmark.run.experiment import data_path_in_jobs

    model = 'import os\nprint("cwd", os.getcwd())\ndef predict(x, params):\n    return x\n'
    with LocalExecutor(LocalExecutorConfig(sandbox="none")) as bare:
        assert not getattr(bare, "relocates", False) and data_path_in_jobs(toy, bare) == str(toy.public_dir)
        scratch = tmp_path / "scratch"
        outcome = run_phase(toy, {"model.py": model}, "val", bare, scratch, 60)
    assert outcome.ok and f"cwd {scratch / 'code'}" in outcome.stdout.decode()
