"""GPU jobs on the local executor, without a GPU: slots, device isolation, release order, limits, refusals.

The machine's GPUs are faked (tests/fake_gpus.py): NVIDIA device nodes in a temporary /dev and an
nvidia-smi script that names GPUs by UUID and lists the processes a test says hold GPU memory.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path

import pytest

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.executors import Job, LocalExecutor, LocalExecutorConfig
from researchbench.benchmark.executors import gpu_devices as gpu_devices_mod
from researchbench.benchmark.executors.base import GPU_WALL_WHY
from researchbench.benchmark.executors.gpu_devices import GpuDevices
from researchbench.benchmark.executors.local import sandbox as sandbox_mod
from researchbench.benchmark.executors.local.gpus import GpuPool, slots_problem
from tests.executor_conformance import make_job, run
from tests.fake_gpus import fake_dev, fake_devices, fake_smi, smi_calls

UUIDS = ["GPU-aaaaaaaa-0000", "GPU-bbbbbbbb-1111"]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


# -- slots -------------------------------------------------------------------------------------------


def test_pool_hands_out_slots_and_distinct_gpus() -> None:
    pool = GpuPool([0, 1])
    assert pool.capacity == 2
    assert pool.acquire(1) == [0] and pool.acquire(1) == [1]
    waiter: list[list[int]] = []
    thread = threading.Thread(target=lambda: waiter.append(pool.acquire(1)))
    thread.start()
    thread.join(0.3)
    assert thread.is_alive() and not waiter, "a third job got a slot while both GPUs were held"
    pool.release([1])
    thread.join(5)
    assert waiter == [[1]]
    pool.release([0])
    pool.release([1])
    with pytest.raises(ValueError, match="released more often"):
        pool.release([1])

    shared = GpuPool([0, 1], jobs_per_gpu=2)
    assert shared.capacity == 4
    assert [shared.acquire(1) for _ in range(4)] == [[0], [1], [0], [1]]  # the least used GPU first
    shared.release([0])
    shared.release([1])
    assert shared.acquire(2) == [0, 1]  # g GPUs are g distinct ones, never one GPU twice
    with pytest.raises(ValueError):
        GpuPool([0], jobs_per_gpu=0)


SLOT_REPORTER = """
    import json, os, time
    start = time.time()
    time.sleep(0.4)
    print(json.dumps({"cvd": os.environ["CUDA_VISIBLE_DEVICES"], "start": start, "end": time.time()}))
"""


def test_concurrent_jobs_never_share_a_gpu(tmp_path: Path) -> None:
    cfg = LocalExecutorConfig(sandbox="none", gpus=[0, 1])
    with LocalExecutor(cfg, gpu_devices=fake_devices(tmp_path / "m", 2)) as ex:
        assert ex.capacity == 2
        jobs = [make_job(tmp_path, SLOT_REPORTER, name=f"g{i}", gpus=1) for i in range(4)]
        futures = [ex.submit(j) for j in jobs]
        assert all(f.result(timeout=60).ok for f in futures)
        runs = [json.loads(j.stdout_path.read_text()) for j in jobs]
        assert sorted(r["cvd"] for r in runs) == ["0", "0", "1", "1"]
        for a in runs:
            for b in runs:
                if a is not b and a["start"] < b["end"] and b["start"] < a["end"]:
                    assert a["cvd"] != b["cvd"], "two concurrent jobs shared a GPU"

        both, out, _ = run(ex, make_job(tmp_path, SLOT_REPORTER, name="both", gpus=2))
        assert both.ok and json.loads(out)["cvd"] == "0,1"
        none, out, _ = run(ex, make_job(tmp_path, SLOT_REPORTER, name="cpu", gpus=0))
        assert none.ok and json.loads(out)["cvd"] == ""

        t0 = time.monotonic()
        greedy = ex.submit(make_job(tmp_path, "print(1)", name="greedy", gpus=3)).result(timeout=30)
        assert greedy.error and "3 GPU" in greedy.error and not greedy.ok
        assert time.monotonic() - t0 < 5


# Each job announces itself, then waits (at most `patience` s) until the other has announced itself too:
# both finish "together" only if they ran at the same time.
BARRIER = """
    import os, sys, time
    here, other, patience = sys.argv[1], sys.argv[2], float(sys.argv[3])
    open(here, "w").write(os.environ["CUDA_VISIBLE_DEVICES"])
    deadline = time.time() + patience
    while not os.path.exists(other) and time.time() < deadline:
        time.sleep(0.05)
    print("together" if os.path.exists(other) else "alone")
"""


@pytest.mark.parametrize("jobs_per_gpu, expected", [(2, ["together", "together"]), (1, ["alone", "together"])])
def test_jobs_per_gpu_lets_jobs_share_one_gpu(tmp_path: Path, jobs_per_gpu: int, expected: list[str]) -> None:
    cfg = LocalExecutorConfig(sandbox="none", gpus=[0], jobs_per_gpu=jobs_per_gpu, max_parallel=2)
    a, b = tmp_path / "a.flag", tmp_path / "b.flag"
    patience = "60" if jobs_per_gpu == 2 else "2"
    with LocalExecutor(cfg, gpu_devices=fake_devices(tmp_path / "m", 1)) as ex:
        assert ex.capacity == jobs_per_gpu
        first = ex.submit(make_job(tmp_path, BARRIER, str(a), str(b), patience, name="a", gpus=1, timeout_s=120))
        second = ex.submit(make_job(tmp_path, BARRIER, str(b), str(a), patience, name="b", gpus=1, timeout_s=120))
        results = [first.result(timeout=180), second.result(timeout=180)]
    assert all(r.ok for r in results), results
    outs = [(tmp_path / n / "stdout.txt").read_text().strip() for n in ("a", "b")]
    assert outs == expected
    assert a.read_text() == b.read_text() == "0"


def test_jobs_per_gpu_is_validated() -> None:
    with pytest.raises(UserError, match=re.escape("executor.jobs_per_gpu=0 is out of range")):
        LocalExecutor(LocalExecutorConfig(sandbox="none", jobs_per_gpu=0))


def test_slots_problem_counts_slots_and_distinct_gpus() -> None:
    assert slots_problem([0], 2, 2, 1, "t") == ""  # two jobs of one GPU on one GPU shared twice
    assert slots_problem([0, 1], 2, 2, 2, "t") == ""
    assert "give executor.gpus=[0, 1]" in slots_problem([0], 4, 1, 2, "t")  # 2 GPUs per job: 2 distinct ids
    assert "executor.jobs_per_gpu=2; give executor.gpus=[0, 1]" in slots_problem([0], 2, 3, 1, "t")
    empty = slots_problem([], 1, 1, 1, "toy_gpu")
    assert empty.startswith("task 'toy_gpu' needs 1 GPU(s) per job but executor.gpus is empty")
    assert "executor.gpus=[0]" in empty


# -- what a job sees ----------------------------------------------------------------------------------


def _fake_job(tmp_path: Path, gpus: int) -> Job:
    (tmp_path / "w").mkdir(exist_ok=True)
    return Job(argv=("true",), workdir=tmp_path / "w", stdout_path=tmp_path / "o", stderr_path=tmp_path / "e",
               timeout_s=1, gpus=gpus)


def _dev_binds(argv: list[str]) -> set[str]:
    return {argv[i + 1] for i, a in enumerate(argv) if a == "--dev-bind"}


def test_a_job_is_bound_only_its_own_gpu_nodes(tmp_path: Path) -> None:
    devices = fake_devices(tmp_path, 2, UUIDS)
    dev = devices.dev_dir
    shared = {str(dev / n) for n in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", "nvidia-caps")}
    assert set(devices.nodes([1])) == {str(dev / "nvidia1")} | shared
    assert set(devices.nodes([0, 1])) == {str(dev / "nvidia0"), str(dev / "nvidia1")} | shared
    assert devices.nodes([]) == []
    job = _fake_job(tmp_path, gpus=1)
    layout = sandbox_mod.sandbox_layout(job, gpu_nodes=devices.nodes([1]))
    assert _dev_binds(layout.argv("bwrap", job.workdir)) == {str(dev / "nvidia1")} | shared
    assert "/sys" in layout.readonly  # CUDA needs it
    cpu_job = _fake_job(tmp_path, gpus=0)
    cpu_argv = sandbox_mod.sandbox_layout(cpu_job, gpu_nodes=devices.nodes([1])).argv("b", cpu_job.workdir)
    assert "--dev-bind" not in cpu_argv and "/sys" not in cpu_argv


def test_cuda_visible_devices_names_uuids_read_once(tmp_path: Path) -> None:
    devices = fake_devices(tmp_path, 2, UUIDS)
    smi = Path(devices.smi)
    assert devices.env([1]) == {"CUDA_VISIBLE_DEVICES": UUIDS[1], "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert devices.env([0, 1])["CUDA_VISIBLE_DEVICES"] == ",".join(UUIDS)
    assert devices.env([]) == {"CUDA_VISIBLE_DEVICES": ""}
    devices.nodes([0])
    assert smi_calls(smi, "--query-gpu") == 1, "nvidia-smi is asked once per executor"
    without = fake_devices(tmp_path / "plain", 2)  # no nvidia-smi: the ids themselves
    assert without.env([1]) == {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


def test_device_node_follows_the_drivers_minor_number(tmp_path: Path) -> None:
    """nvidia-smi's index 1 may be /dev/nvidia0: the driver's /proc files say which."""
    driver = tmp_path / "driver"
    for bus, uuid, minor in (("0000:01:00.0", UUIDS[0], 1), ("0000:02:00.0", UUIDS[1], 0)):
        (driver / bus).mkdir(parents=True)
        (driver / bus / "information").write_text(f"Model: H100\nGPU UUID: {uuid}\nDevice Minor: {minor}\n")
    devices = GpuDevices(dev_dir=fake_dev(tmp_path, 2), smi=str(fake_smi(tmp_path, UUIDS)), driver_root=driver)
    assert str(devices.dev_dir / "nvidia0") in devices.nodes([1])
    assert str(devices.dev_dir / "nvidia1") not in devices.nodes([1])


# The NVIDIA nodes mounted in the job's sandbox, from its mount table (the fake /dev lies under /tmp, which
# the sandbox covers with its own tmpfs after binding the nodes: the mounts stay listed underneath).
ENV_AND_DEV = """
    import json, os, sys
    dev = sys.argv[1]
    mounted = [line.split()[4] for line in open("/proc/self/mountinfo")]
    print(json.dumps({"cvd": os.environ["CUDA_VISIBLE_DEVICES"], "order": os.environ.get("CUDA_DEVICE_ORDER"),
                      "dev": sorted(os.path.basename(m) for m in mounted if m.startswith(dev + "/"))}))
"""


@pytest.mark.parametrize("sandbox", ["none", pytest.param("bwrap", marks=pytest.mark.skipif(
    not any(not sandbox_mod.probe_bwrap(p) for p in sandbox_mod.bwrap_candidates(None)), reason="no bwrap"))])
def test_the_job_sees_its_gpu_by_uuid(tmp_path: Path, sandbox: str) -> None:
    devices = fake_devices(tmp_path / "m", 2, UUIDS)
    dev = str(devices.dev_dir)
    with LocalExecutor(LocalExecutorConfig(sandbox=sandbox, gpus=[0, 1]), gpu_devices=devices) as ex:
        first = ex._gpus.acquire(1)  # GPU 0 is busy: the job gets GPU 1
        try:
            result, out, err = run(ex, make_job(tmp_path, ENV_AND_DEV, dev, name="gpu", gpus=1))
        finally:
            ex._gpus.release(first)
        cpu, cpu_out, _ = run(ex, make_job(tmp_path, ENV_AND_DEV, dev, name="cpu", gpus=0))
    assert result.ok, err
    seen = json.loads(out)
    assert seen["cvd"] == UUIDS[1] and seen["order"] == "PCI_BUS_ID"
    assert cpu.ok and json.loads(cpu_out)["cvd"] == ""
    if sandbox == "bwrap":  # only its own GPU's node and the shared ones exist in the sandbox
        assert seen["dev"] == ["nvidia-caps", "nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools", "nvidia1",
                               "nvidiactl"]
        assert json.loads(cpu_out)["dev"] == []  # a CPU job is bound no NVIDIA node at all


# -- release order -------------------------------------------------------------------------------------

# Leaves a sleeper behind that escaped the job's process group (setsid) with an empty environment, so no
# marker finds it: only the record of the job's processes does (the /proc fallback, without cgroups).
LEAVES_A_SLEEPER = """
    import subprocess, sys, time
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True,
                               env={}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    open(sys.argv[1], "w").write(str(sleeper.pid))
    time.sleep(2.5)  # long enough for the harness to have seen it among the job's processes
"""

NEXT_JOB = """
    import os, sys
    pid = int(open(sys.argv[1]).read())
    try:
        state = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()[0]
    except OSError:
        state = "gone"
    print(state)
"""


def test_gpu_slot_is_released_only_after_the_jobs_last_process_is_gone(tmp_path: Path) -> None:
    pid_file = tmp_path / "sleeper.pid"
    # two slots of threads, one GPU: the second job waits for the GPU slot, not for a thread
    cfg = LocalExecutorConfig(sandbox="none", gpus=[0, 1])
    with LocalExecutor(cfg, use_cgroups=False, gpu_devices=fake_devices(tmp_path / "m", 2)) as ex:
        first = ex.submit(make_job(tmp_path, LEAVES_A_SLEEPER, str(pid_file), name="first", gpus=2, timeout_s=60))
        second = ex.submit(make_job(tmp_path, NEXT_JOB, str(pid_file), name="second", gpus=2, timeout_s=60))
        a, b = first.result(timeout=120), second.result(timeout=120)
    pid = int(pid_file.read_text())
    try:
        assert a.ok and b.ok, (a, b)
        assert (tmp_path / "second" / "stdout.txt").read_text().strip() in ("gone", "Z"), \
            "the next job got the GPU while the last one's process still lived"
        assert not _alive(pid)
    finally:
        if _alive(pid):
            os.kill(pid, 9)


def test_gpu_memory_still_listed_is_waited_for_and_recorded(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """nvidia-smi keeps listing a (dead) process of the job on its GPU: the slot waits a few seconds,
    then goes back with `gpu_memory_held` set; a job whose processes left the list is not flagged."""
    monkeypatch.setattr(gpu_devices_mod, "RELEASE_WAIT_S", 1.0)
    devices = fake_devices(tmp_path / "m", 1, UUIDS[:1])
    apps = Path(devices.smi).parent / "apps.csv"
    holds = f"import os; open({str(apps)!r}, 'w').write(f'{{os.getpid()}}, {UUIDS[0]}\\n')"
    with LocalExecutor(LocalExecutorConfig(sandbox="none", gpus=[0]), gpu_devices=devices) as ex:
        t0 = time.monotonic()
        held, _, err = run(ex, make_job(tmp_path, holds, name="holds", gpus=1))
        assert held.ok and held.gpu_memory_held, err
        assert time.monotonic() - t0 >= 1.0
        apps.write_text(f"{os.getpid()}, {UUIDS[0]}\n")  # a live process that is not the job's
        clean, _, _ = run(ex, make_job(tmp_path, "print(1)", name="clean", gpus=1))
        assert clean.ok and not clean.gpu_memory_held
    assert smi_calls(Path(devices.smi), "--query-compute-apps") >= 2


# -- limits ------------------------------------------------------------------------------------------


def test_a_gpu_jobs_limit_is_wall_clock_with_its_reason(tmp_path: Path) -> None:
    with LocalExecutor(LocalExecutorConfig(sandbox="none", gpus=[0]), gpu_devices=fake_devices(tmp_path, 1)) as ex:
        slow, _, _ = run(ex, make_job(tmp_path, "import time; time.sleep(60)", name="slow", gpus=1, timeout_s=1.0))
        cpu, _, _ = run(ex, make_job(tmp_path, "print(1)", name="cpu", timeout_s=5.0))
    assert slow.timed_out and slow.limit_why == GPU_WALL_WHY
    assert slow.time_limit(1.0) == {"kind": "wall", "seconds": 1.0, "why": "GPU job: GPU time is not CPU time"}
    assert slow.time_problem(1.0) == "over the wall-clock limit of 1 s (GPU job: GPU time is not CPU time)"
    limit = cpu.time_limit(5.0)
    assert limit["kind"] == "cpu" and limit["seconds"] == 5.0 and limit["backstop_s"] == cpu.wall_limit_s
    assert "CPU time" in str(limit["why"])


# -- GPUs this machine does not have -------------------------------------------------------------------


def test_gpus_the_machine_lacks_are_refused_at_executor_start(tmp_path: Path) -> None:
    one = fake_devices(tmp_path / "one", 1, UUIDS[:1])
    with pytest.raises(UserError) as refused:
        LocalExecutor(LocalExecutorConfig(sandbox="none", gpus=[0, 1]), gpu_devices=one)
    assert str(refused.value).startswith("executor.gpus=[0, 1] but this machine has 1 GPU (nvidia-smi: GPU 0)")
    assert "executor.gpus=[0]" in str(refused.value)
    bare = GpuDevices(dev_dir=tmp_path / "empty-dev", smi="")
    assert bare.machine_problem([0]).startswith("executor.gpus=[0] but this machine has 0 GPUs (no nvidia-smi")
    assert bare.machine_problem([]) == ""
    nodes_only = GpuDevices(dev_dir=fake_dev(tmp_path / "nodes", 2), smi="")
    assert nodes_only.machine_problem([0, 1]) == "" and "has 2 GPUs" in nodes_only.machine_problem([0, 2])


def test_a_step_records_its_time_limit_and_why(toy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The node of a GPU task says its limit was wall-clock, and why; a CPU task's node says CPU time."""
    import dataclasses

    import researchbench.benchmark.executors.local.backend as local_mod
    import researchbench.benchmark.run.engine as engine
    from researchbench.benchmark.contract.agent_api import Agent
    from researchbench.benchmark.tasks.manifest import Resources
    from engine_kit import TreePolicy, run_agent, write_step

    _, _, records = run_agent(tmp_path / "cpu", lambda: Agent(TreePolicy(), {"write": write_step}), "budget.steps=1")
    (cpu_node,) = [r["node"] for r in records if r["kind"] == "finished"][:1]
    assert cpu_node["time_limit"]["kind"] == "cpu" and cpu_node["time_limit"]["seconds"] == 30

    real = engine.load_task
    monkeypatch.setattr(engine, "load_task", lambda path: dataclasses.replace(
        real(path), resources=Resources(gpus=1, cpus=1, memory_gb=2, disk_gb=0.05)))
    fake = fake_devices(tmp_path / "m", 1, UUIDS[:1])
    monkeypatch.setattr(local_mod, "GpuDevices", lambda: fake)
    summary, _, records = run_agent(tmp_path / "gpu", lambda: Agent(TreePolicy(), {"write": write_step}),
                                    "budget.steps=1", "executor.gpus=[0]")
    nodes = [r["node"] for r in records if r["kind"] == "finished"]
    assert nodes and all(n["time_limit"] == {"kind": "wall", "seconds": 30, "why": GPU_WALL_WHY} for n in nodes)
    final = [r for r in records if r["kind"] == "final"][0]
    assert final["best"]["time_limit"]["kind"] == "wall"


# -- refused at preflight, through the command line -----------------------------------------------------


def _gpu_task(tmp_path: Path) -> dict[str, str]:
    """tests/fixtures/tasks/toy_gpu, the toy task as a variant needing one GPU (never prepared: the GPU check
    comes first)."""
    return {"RESEARCHBENCH_WORKSPACE": str(tmp_path / "workspace")}


@pytest.mark.parametrize("args, smi_uuids, fragments", [
    ([], None, ["task 'toy_gpu' needs 1 GPU(s) per job but executor.gpus is empty", "executor.gpus=[0]",
                "(task=toy is the same code at its CPU scale)"]),
    (["executor.gpus=[0,1]", "parallel=2"], UUIDS[:1],
     ["executor.gpus=[0, 1] but this machine has 1 GPU (nvidia-smi: GPU 0): GPU(s) [1] do not exist"]),
    (["executor.gpus=[0]"], [], ["executor.gpus=[0] but this machine has 0 GPUs (nvidia-smi: no GPU)"]),
])
def test_a_gpu_task_without_the_gpus_is_refused_in_one_line(tmp_path: Path, args: list[str],
                                                             smi_uuids: list[str] | None, fragments: list[str]) -> None:
    from conftest import run_cli
    from conftest import one_line_error

    env = _gpu_task(tmp_path)
    if smi_uuids is not None:  # this machine's nvidia-smi, as the harness finds it on PATH
        env["PATH"] = f"{fake_smi(tmp_path, smi_uuids).parent}{os.pathsep}{os.environ['PATH']}"
    proc = run_cli("agent=greedy", "llm=openai", "task=toy_gpu", f"results_dir={tmp_path / 'results'}", *args,
                   env={**env, "OPENAI_API_KEY": "sk-test-never-called"})
    one_line_error(proc, *fragments)
    assert not (tmp_path / "results").exists(), "a refused run must write nothing"
