"""Hostile agent code, proposed through the real greedy loop: contained, the run goes on, scores unaffected.

Every attack keeps `predict` honest (slope 1 gives val MSE 5.0) and would score a perfect 0.0 only if
it broke out. The last reply is an honest improvement, which must still win.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import sys
import threading
from pathlib import Path

import pytest

from conftest import REPO, journal_records, run_cli, run_inprocess

HONEST = 'def predict(x, params):\n    return params["slope"] * x\n'


def _reply(name: str, body: str) -> str:
    # the honest predict comes first, so an attack that breaks out can replace it with a cheat
    return f"Plan: {name}.\n\n### FILE: model.py\n```python\n{HONEST}{body}\n```\n"


@pytest.fixture()
def listener():
    """A loopback server agent code must not reach."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], hits
    server.shutdown()


def _attacks(toy, port: int, outside: Path) -> list[tuple[str, str]]:
    labels = toy.labels_dir / "val_y.json"
    evaluator = toy.spec.task_dir / "evaluate.py"
    return [
        ("read hidden labels", f"""
import json
try:
    _labels = json.load(open({str(labels)!r}))
    def predict(x, params, _l=_labels, _x=[0.5, 1.5]):
        return _l[_x.index(x)]
    CHEAT = True
except OSError:
    CHEAT = False"""),
        ("reach the network", f"""
import socket, urllib.request
for target in (("127.0.0.1", {port}), ("pypi.org", 443)):
    try:
        socket.create_connection(target, timeout=2).close()
    except OSError:
        pass
try:
    urllib.request.urlopen("http://127.0.0.1:{port}/leak", timeout=2)
except Exception:
    pass"""),
        ("write outside the workspace", f"""
for target in ({str(outside / 'pwned.txt')!r}, {str(REPO / 'pwned.txt')!r}, {str(labels)!r}):
    try:
        open(target, "w").write("0")
    except OSError:
        pass"""),
        ("overwrite the driver and the evaluator", f"""
for target in ("driver.py", {str(evaluator)!r}):
    try:
        open(target, "w").write("print('owned')")
    except OSError:
        pass"""),
        ("fork-bomb", """
import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import os\\nwhile True:\\n    try:\\n        os.fork()\\n    except OSError:\\n        pass"])"""),
        ("allocate 20 GB", "_hog = bytearray(20 * 1024 ** 3)"),
        ("print 1 GB", """
import sys
_chunk = "x" * (1 << 20)
for _ in range(1024):
    sys.stdout.write(_chunk)"""),
        ("sleep forever", "import time\ntime.sleep(10 ** 6)"),
        ("leave a process that rewrites the predictions", """
import glob, os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        end = time.time() + 20
        while time.time() < end:
            for path in glob.glob("/**/predictions.json", recursive=True):
                try:
                    open(path, "w").write("[1.5, 4.5]")
                except OSError:
                    pass
            time.sleep(0.01)
    os._exit(0)"""),
    ]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_hostile_code_is_contained_and_scores_are_unaffected(toy, listener, tmp_path: Path) -> None:
    port, hits = listener
    outside = tmp_path / "outside"
    outside.mkdir()
    protected = [toy.spec.task_dir / "evaluate.py", toy.spec.code_dir / "driver.py", toy.labels_dir / "val_y.json"]
    before = {p: _digest(p) for p in protected}
    attacks = _attacks(toy, port, outside)
    honest = "Plan: slope 3.\n\n### FILE: params.json\n```json\n{\"slope\": 3.0}\n```\n"
    summary, out = run_inprocess(
        "agent=greedy", "task=toy", f"results_dir={tmp_path / 'results'}", f"budget.steps={len(attacks) + 1}",
        "budget.step_timeout_s=20", "agent.max_debug_depth=0",
        # 20 CPU seconds per step; the sleeper is ended by the wall-clock backstop, 1 x 20 + 4 s
        "executor.wall_backstop_factor=1", "executor.wall_backstop_s=4",
        llm__mock_responses=[_reply(name, body) for name, body in attacks] + [honest])
    nodes = [r["node"] for r in journal_records(Path(summary["run_dir"])) if r["kind"] == "finished"]
    by_plan = {n["plan"].rstrip("."): n for n in nodes}

    for name, _ in attacks:
        node = by_plan[name]
        assert node["executed"], name
        # contained: either it failed, or it ran honestly; never a perfect (cheated) score
        assert node["status"] == "buggy" or node["primary"] == 5.0, (name, node["status"], node["primary"])
    assert by_plan["allocate 20 GB"]["status"] == "buggy"
    assert by_plan["sleep forever"]["timed_out"]
    assert by_plan["sleep forever"]["bug_reason"].startswith("killed: over the wall-clock backstop of 24 s")
    assert by_plan["print 1 GB"]["status"] == "ok"
    stdout_blob = Path(summary["run_dir"]) / "blobs" / by_plan["print 1 GB"]["stdout"][:2] / by_plan["print 1 GB"]["stdout"][2:]
    assert stdout_blob.stat().st_size < 64 * 1024 * 1024
    assert hits == [], "agent code reached a loopback server"
    assert not (outside / "pwned.txt").exists() and not (REPO / "pwned.txt").exists()
    assert {p: _digest(p) for p in protected} == before

    # the run went on: the honest improvement after all attacks wins, on val and on the hidden test
    assert summary["status"] == "finished"
    assert summary["best"]["val"] == 0.0 and summary["best"]["test"] == 0.0
    assert summary["baseline"]["test"] == 20.0


# -- issue 5: escalation, forged outputs, unbounded evaluator, wedged cleanup, disk fill -------------

CHEAT = "\nif ESCAPED:\n    def predict(x, params):\n        return 3.0 * x  # the true slope: a perfect, forged score\n"
TAMPER = """
import atexit, os, sys
_phase_is_test = any("test_x" in a for a in sys.argv)
_out = os.path.join(sys.argv[sys.argv.index("--out") + 1], "predictions.json")
def _tamper():
{body}
atexit.register(_tamper)
"""


def _tamper(body: str) -> str:
    """Agent code that replaces the driver's predictions.json after the driver wrote it."""
    return TAMPER.format(body="\n".join("    " + line for line in body.strip().splitlines()))


def _host_attacks() -> list[tuple[str, str]]:
    return [
        ("open kernel.core_pattern for writing", """
import os
try:
    os.close(os.open("/proc/sys/kernel/core_pattern", os.O_WRONLY))  # opened, never written
    ESCAPED = True
except OSError:
    ESCAPED = False""" + CHEAT),
        ("read /etc/shadow", """
try:
    ESCAPED = bool(open("/etc/shadow").read())
except OSError:
    ESCAPED = False""" + CHEAT),
        ("run as root or with capabilities", """
import os
_caps = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
ESCAPED = os.getuid() == 0 or int(_caps, 16) != 0""" + CHEAT),
    ]


def _output_attacks(labels: Path) -> list[tuple[str, str, str]]:
    """(name, model.py body, what the bug reason must say)."""
    link_to_labels = f"""
os.remove(_out)
os.symlink({str(labels)!r} + ("/test_y.json" if _phase_is_test else "/val_y.json"), _out)"""
    deep = """
_fd = os.open(os.path.dirname(_out), os.O_RDONLY)
for _ in range(5000):
    os.mkdir("d", dir_fd=_fd)
    _child = os.open("d", os.O_RDONLY, dir_fd=_fd)
    os.close(_fd)
    _fd = _child"""
    locked = """
_d = os.path.join(os.path.dirname(_out), "locked", "inner")
os.makedirs(_d)
open(os.path.join(_d, "f"), "w").write("x")
os.chmod(_d, 0)
os.chmod(os.path.dirname(_d), 0)"""
    fill = """
for _i in range(40):
    with open(os.path.join(os.path.dirname(_out), f"fill{_i}"), "wb") as _f:
        _f.write(b"x" * (5 << 20))"""
    return [
        ("predictions are a symlink to the labels", _tamper(link_to_labels), "symbolic link"),
        ("predictions are a hard link", _tamper("os.link(_out, _out + '.bak')"), "hard link"),
        ("predictions are a FIFO", _tamper("os.remove(_out)\nos.mkfifo(_out)"), "FIFO"),
        ("predictions link to a device that never ends", _tamper("os.remove(_out)\nos.symlink('/dev/zero', _out)"),
         "symbolic link"),
        ("predictions are a directory", _tamper("os.remove(_out)\nos.mkdir(_out)"), "directory"),
        ("predictions are a sparse 4 GB file", _tamper("open(_out, 'r+b').truncate(4 << 30)"), ""),
        ("a 5000-deep tree in the output dir", _tamper(deep), "deeper"),
        ("an unreadable tree in the output dir", _tamper(locked), ""),
        ("fill the disk", _tamper(fill), "disk"),
    ]


def test_escalation_and_forged_outputs_are_contained(toy, tmp_path: Path) -> None:
    outside_before = {p: _digest(p) for p in (toy.labels_dir / "val_y.json", toy.labels_dir / "test_y.json",
                                              toy.spec.task_dir / "evaluate.py")}
    host = _host_attacks()
    outputs = _output_attacks(toy.labels_dir)
    honest = "Plan: slope 3.\n\n### FILE: params.json\n```json\n{\"slope\": 3.0}\n```\n"
    replies = [_reply(name, body) for name, body in host] + [_reply(n, b) for n, b, _ in outputs] + [honest]
    summary, _ = run_inprocess(
        "agent=greedy", "task=toy", f"results_dir={tmp_path / 'results'}", f"budget.steps={len(replies)}",
        "budget.step_timeout_s=20", "agent.max_debug_depth=0", llm__mock_responses=replies)
    run_dir = Path(summary["run_dir"])
    by_plan = {n["plan"].rstrip("."): n for n in
               (r["node"] for r in journal_records(run_dir) if r["kind"] == "finished")}

    for name, _ in host:  # contained: the attack ran, found nothing, and the honest slope-1 score stands
        node = by_plan[name]
        assert node["status"] == "ok" and node["primary"] == 5.0, (name, node["status"], node["bug_reason"])
    for name, _, reason in outputs:
        node = by_plan[name]
        assert node["executed"] and node["primary"] != 0.0, (name, node["primary"])
        if reason:
            assert node["status"] == "buggy" and reason in node["bug_reason"], (name, node["bug_reason"])
        assert str(toy.labels_dir) not in node["bug_reason"] and "val_y" not in node["bug_reason"]
    # the run went on, the honest improvement wins on val and on the hidden test
    assert summary["status"] == "finished"
    assert summary["best"]["val"] == 0.0 and summary["best"]["test"] == 0.0
    # nothing outside the nodes' own dirs changed; no scratch is left behind
    assert {p: _digest(p) for p in outside_before} == outside_before
    assert not (run_dir / "scratch").exists()
    from researchbench.benchmark.tasks.workspace import open_prepared

    open_prepared(toy.spec)  # the workspace still verifies against its checksums


def test_a_symlink_planted_only_in_the_test_phase_scores_nothing(toy, tmp_path: Path) -> None:
    """Honest on val (so it becomes the best node), forging only when the hidden test runs."""
    stealth = _tamper(f"""
if _phase_is_test:
    os.remove(_out)
    os.symlink({str(toy.labels_dir / 'test_y.json')!r}, _out)""")
    reply = "Plan: stealth.\n\n### FILE: params.json\n```json\n{\"slope\": 2.9}\n```\n" \
            f"### FILE: model.py\n```python\n{HONEST}{stealth}\n```\n"
    summary, _ = run_inprocess("agent=greedy", "task=toy", f"results_dir={tmp_path}", "budget.steps=1",
                               llm__mock_responses=[reply])
    assert summary["best"]["node"] != "0000" and summary["best"]["val"] > 0.0
    assert summary["best"]["test"] is None, "the forged hidden-test score must not count"
    assert "symbolic link" in summary["best"]["test_error"]


PROBE_EVALUATOR = '''"""Scores like the toy evaluator, and reports what its own sandbox lets it see."""
import json, os, sys

predictions_path, labels_path, metrics_path = sys.argv[1:4]
predictions, labels = json.load(open(predictions_path)), json.load(open(labels_path))
def can(fn):
    try:
        fn()
        return 1.0
    except OSError:
        return 0.0
json.dump({"metrics": {
    "mse": sum((p - y) ** 2 for p, y in zip(predictions, labels)) / len(labels),
    "saw_api_key": float(any(k.endswith("_API_KEY") for k in os.environ)),
    "uid": float(os.getuid()),
    "reads_shadow": can(lambda: open("/etc/shadow").read()),
    "sees_job_output": float(os.path.exists(os.path.join(os.path.dirname(predictions_path), "..", "output"))),
}}, open(metrics_path, "w"))
'''


@pytest.fixture()
def probe_task(tmp_path: Path):
    """The toy task with an evaluator that reports its environment."""
    import shutil

    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.workspace import prepare

    task_dir = tmp_path / "tasks" / "probe"
    shutil.copytree(REPO / "tests" / "fixtures" / "tasks" / "toy", task_dir)
    (task_dir / "task.yaml").write_text((task_dir / "task.yaml").read_text().replace("name: toy", "name: probe"))
    (task_dir / "evaluate.py").write_text(PROBE_EVALUATOR)
    return prepare(load_task(task_dir), root=tmp_path / "ws", log=lambda *a: None)


def test_evaluator_runs_sandboxed_without_secrets(probe_task, tmp_path: Path, monkeypatch) -> None:
    from researchbench.benchmark.executors import LocalExecutor, LocalExecutorConfig
    from researchbench.benchmark.run.experiment import run_phase

    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    with LocalExecutor(LocalExecutorConfig(sandbox="auto")) as ex:
        outcome = run_phase(probe_task, {}, "val", ex, tmp_path / "results" / "scratch" / "0001", 20)
        sandboxed = ex.sandbox_mode == "bwrap"
    assert outcome.ok, outcome.bug_reason
    assert outcome.primary == 5.0 and outcome.metrics["saw_api_key"] == 0.0
    if sandboxed:
        assert outcome.metrics["reads_shadow"] == 0.0 and outcome.metrics["sees_job_output"] == 0.0
        if os.geteuid() == 0:
            cfg = LocalExecutorConfig()  # each job, the evaluator too, runs as a uid of its own from this range
            assert cfg.job_uid <= outcome.metrics["uid"] < cfg.job_uid + cfg.job_uid_count
    assert not (tmp_path / "results" / "scratch" / "0001").exists()


def test_leftover_scratch_from_a_killed_run_does_not_block_the_next(toy, tmp_path: Path) -> None:
    """A run killed mid-step can leave a 5000-deep or chmod-000 tree; the re-run clears and goes on."""
    from researchbench.benchmark.executors import LocalExecutor, LocalExecutorConfig
    from researchbench.benchmark.run.experiment import run_phase

    scratch = tmp_path / "scratch" / "0001"
    fd = os.open(tmp_path, os.O_RDONLY)
    for name in ("scratch", "0001", "output", *["d"] * 5000):
        try:
            os.mkdir(name, dir_fd=fd)
        except FileExistsError:
            pass
        child = os.open(name, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)
    (scratch / "code" / "locked").mkdir(parents=True)
    os.chmod(scratch / "code" / "locked", 0)
    with LocalExecutor(LocalExecutorConfig()) as ex:
        outcome = run_phase(toy, {}, "val", ex, scratch, 20)
    assert outcome.ok and outcome.primary == 5.0, outcome.bug_reason


def test_workspace_under_a_bound_system_dir_is_refused(tmp_path: Path) -> None:
    """Labels under /usr (a plausible shared install) would be readable by agent code: refuse to start."""
    from researchbench.benchmark.common.safefs import remove_tree
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.workspace import prepare
    from test_executor_local import HAS_BWRAP

    if not HAS_BWRAP:
        pytest.skip("without a sandbox nothing is bound")
    bound = [Path("/usr/local/share"), Path(sys.prefix)]
    parent = next((p for p in bound if os.access(p, os.W_OK)), None)
    if parent is None:
        pytest.skip("no bound system dir is writable here")
    workspace = parent / f"researchbench-test-ws-{os.getpid()}"
    try:
        prepare(load_task(get_registry().tasks["toy"]), root=workspace, log=lambda *a: None)
        proc = run_cli("task=toy", f"results_dir={tmp_path / 'results'}",
                       env={"RESEARCHBENCH_WORKSPACE": str(workspace)})
        assert proc.returncode == 2, proc.stdout + proc.stderr
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "refusing to run" in lines[0] and "would be visible" in lines[0], lines
        assert not (tmp_path / "results").exists()
    finally:
        remove_tree(workspace)


def test_an_llm_cache_dir_inside_a_folder_bound_into_jobs_is_refused(toy, tmp_path: Path) -> None:
    """Issue 26: a cache of recorded replies in the public data (every job sees it) is refused at start, in
    one line, before anything is written; the same cache outside every bound folder runs."""
    from test_executor_local import HAS_BWRAP

    if not HAS_BWRAP:
        pytest.skip("without a sandbox nothing is bound")
    cache = toy.public_dir / "llm-cache"
    args = ["task=toy", "agent=greedy", "llm=mock", "budget.steps=1", f"results_dir={tmp_path / 'results'}"]
    proc = run_cli(*args, f"llm.cache_dir={cache}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: refusing to run: llm.cache_dir {cache} lies inside") \
        and "bound into every job" in lines[0], lines
    assert not cache.exists() and not (tmp_path / "results").exists()
    fine = run_cli(*args, f"llm.cache_dir={tmp_path / 'cache'}")
    assert fine.returncode == 0, fine.stderr[-2000:]
