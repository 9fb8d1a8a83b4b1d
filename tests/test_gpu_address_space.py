"""A GPU job runs without an address-space limit: CUDA maps device memory into it (tens of GB of
virtual addresses for a few MB of RAM), so RLIMIT_AS would make every CUDA program fail at start."""

from __future__ import annotations

import resource
from pathlib import Path

from benchmark.executors.base import Job, Limits
from benchmark.executors.local import _rlimits


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
