"""The local backend: each job a subprocess on this machine, in a bubblewrap sandbox (`backend`: LocalExecutor).

Its pieces: the sandbox's mounts (`sandbox`), the job's own capped filesystem and the supervisor that runs first
inside it (`job_fs`, `supervisor.py`), an unprivileged uid per job (`job_uids`), cgroups (`cgroups`) and, without
them, CPU time and resident memory read from /proc (`cpu_time`, `resident_memory`), the pids a job ever had
(`job_pids`), killing a tree until it is gone (`kill_loop`), no user namespaces inside (`no_userns`), open-file
limits (`open_files`), files a job still holds (`held_files`) and GPU slots (`gpus`).

May import: `researchbench.benchmark.executors` (base, gpu_devices, output, remote_files), `researchbench.benchmark.common`.
"""
from researchbench.benchmark.executors.local.backend import LocalExecutor, LocalExecutorConfig

__all__ = ["LocalExecutor", "LocalExecutorConfig"]
