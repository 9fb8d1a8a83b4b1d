"""A GPU job's memory: no address-space limit (CUDA maps device memory into it: tens of GB of virtual
addresses for a few MB of RAM, so RLIMIT_AS would fail every CUDA program at start), its cgroup where the
host has one, else its processes' resident memory, sampled once a second."""

from __future__ import annotations

import resource
from pathlib import Path

from researchbench.benchmark.executors.base import Job, Limits
from researchbench.benchmark.executors.local.backend import _rlimits


def _job(gpus: int) -> Job:
    return Job(argv=("true",), workdir=Path("/tmp"), stdout_path=Path("/tmp/o"), stderr_path=Path("/tmp/e"),
               timeout_s=10, gpus=gpus, limits=Limits(memory_gb=2))


def test_a_cpu_job_is_bound_by_its_address_space() -> None:
    limits = dict(_rlimits(_job(0), None, cpu_limited=True))
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    assert limits[resource.RLIMIT_AS] == min(2 * 1024 ** 3, hard if hard != resource.RLIM_INFINITY else 2 * 1024 ** 3)


def test_a_gpu_job_keeps_its_file_limits_but_no_address_space_limit() -> None:
    limits = dict(_rlimits(_job(1), None, cpu_limited=False))
    assert resource.RLIMIT_AS not in limits
    assert resource.RLIMIT_FSIZE in limits and limits[resource.RLIMIT_CORE] == 0


HOG = """
import time
block = bytearray(700 * 1024 * 1024)  # touched, so it is resident
for i in range(0, len(block), 4096):
    block[i] = 1
print("allocated", flush=True)
time.sleep(60)
"""


def test_a_gpu_job_without_a_memory_cgroup_is_held_to_its_limit_by_resident_memory(tmp_path: Path) -> None:
    from researchbench.benchmark.executors import LocalExecutor, LocalExecutorConfig
    from tests.executor_conformance import make_job, run
    from tests.fake_gpus import fake_devices

    cfg = LocalExecutorConfig(sandbox="none", gpus=[0])
    with LocalExecutor(cfg, use_cgroups=False, gpu_devices=fake_devices(tmp_path / "m", 1)) as ex:
        result, out, _ = run(ex, make_job(tmp_path, HOG, gpus=1, timeout_s=120, limits=Limits(memory_gb=0.5)))
        assert not result.ok and "over the job's limit of 0.5 GB" in result.violation, result
        assert result.seconds < 60, "killed when it passed the limit, not at the end of its sleep"
        small, _, _ = run(ex, make_job(tmp_path, HOG.replace("700 *", "100 *").replace("60)", "2)"), name="small",
                                       gpus=1, timeout_s=120, limits=Limits(memory_gb=0.5)))
        assert small.ok, small
