"""This machine's NVIDIA GPUs as the local executor hands them to jobs: ids, UUIDs, device nodes, memory.

`executor.gpus` names GPUs by nvidia-smi's index (PCI bus order). A job sees only its own GPUs: the
sandbox binds only their /dev/nvidia<minor> nodes (plus the shared control nodes), and the job's
CUDA_VISIBLE_DEVICES names them by UUID, because CUDA's numbering inside a sandbox that shows fewer
devices need not match the host's (CUDA_DEVICE_ORDER=PCI_BUS_ID makes what is left follow the
bus order). Without nvidia-smi the ids themselves are used. nvidia-smi is asked once per executor.

After a GPU job ends, `GpuDevices.wait_released` waits (bounded) until nvidia-smi no longer lists a
process of that job on its GPUs, so the next job on the GPU finds its memory free.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Collection, Optional, Sequence

log = logging.getLogger(__name__)

SHARED_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", "nvidia-caps")
DRIVER_GPUS = Path("/proc/driver/nvidia/gpus")  # one dir per GPU; its `information` names UUID and minor
_SMI_TIMEOUT_S = 20.0
RELEASE_WAIT_S = 5.0  # longest a finished job's GPU slot waits for nvidia-smi to stop listing the job
_RELEASE_POLL_S = 0.25


def run_smi(smi: str, *args: str) -> Optional[list[list[str]]]:
    """nvidia-smi's csv rows (fields stripped), or None when it cannot run or fails."""
    try:
        proc = subprocess.run([smi, *args, "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=_SMI_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("%s %s failed: %s", smi, " ".join(args), exc)
        return None
    if proc.returncode != 0:
        log.warning("%s %s exited %s: %s", smi, " ".join(args), proc.returncode, proc.stderr.strip()[-300:])
        return None
    return [[f.strip() for f in line.split(",")] for line in proc.stdout.splitlines() if line.strip()]


def parse_gpus(rows: list[list[str]]) -> dict[int, str]:
    """`--query-gpu=index,uuid` rows as {index: uuid}."""
    return {int(row[0]): row[1] for row in rows if len(row) >= 2 and row[0].isdigit()}


def parse_apps(rows: list[list[str]]) -> list[tuple[int, str]]:
    """`--query-compute-apps=pid,gpu_uuid` rows as (pid, uuid) pairs."""
    return [(int(row[0]), row[1]) for row in rows if len(row) >= 2 and row[0].isdigit()]


def driver_minors(root: Path = DRIVER_GPUS) -> dict[str, int]:
    """{GPU UUID: device minor} from the driver's /proc files (the N of /dev/nvidiaN); {} where unreadable."""
    out: dict[str, int] = {}
    try:
        dirs = sorted(root.iterdir())
    except OSError:
        return out
    for d in dirs:
        try:
            text = (d / "information").read_text()
        except OSError:
            continue
        uuid = re.search(r"^GPU UUID:\s*(\S+)", text, re.M)
        minor = re.search(r"^Device Minor:\s*(\d+)", text, re.M)
        if uuid and minor:
            out[uuid.group(1)] = int(minor.group(1))
    return out


def nvidia_gpu_nodes(dev_dir: Path = Path("/dev")) -> list[int]:
    """The N of every /dev/nvidiaN present, sorted."""
    try:
        names = os.listdir(dev_dir)
    except OSError:
        return []
    return sorted(int(n[len("nvidia"):]) for n in names if n.startswith("nvidia") and n[len("nvidia"):].isdigit())


class GpuDevices:
    """One executor's view of the machine's GPUs; nvidia-smi is asked at most once for the index->UUID map."""

    def __init__(self, dev_dir: Path = Path("/dev"), smi: Optional[str] = None,
                 driver_root: Path = DRIVER_GPUS) -> None:
        self.dev_dir = Path(dev_dir)
        self.smi = smi if smi is not None else shutil.which("nvidia-smi")
        self._driver_root = driver_root
        self._lock = threading.Lock()
        self._read = False
        self._uuids: Optional[dict[int, str]] = None
        self._minors: dict[str, int] = {}

    def uuids(self) -> Optional[dict[int, str]]:
        """{nvidia-smi index: UUID}, read once; None without a working nvidia-smi."""
        with self._lock:
            if not self._read:
                self._read = True
                rows = run_smi(self.smi, "--query-gpu=index,uuid") if self.smi else None
                self._uuids = parse_gpus(rows) if rows is not None else None
                self._minors = driver_minors(self._driver_root) if self._uuids else {}
            return self._uuids

    def visible_devices(self, ids: Sequence[int]) -> str:
        """CUDA_VISIBLE_DEVICES for a job holding `ids`: their UUIDs when known, else the ids."""
        uuids = self.uuids() or {}
        return ",".join(uuids.get(i, str(i)) for i in ids)

    def env(self, ids: Sequence[int]) -> dict[str, str]:
        """What a job holding `ids` gets in its environment (a job without GPUs: CUDA_VISIBLE_DEVICES="")."""
        if not ids:
            return {"CUDA_VISIBLE_DEVICES": ""}
        return {"CUDA_VISIBLE_DEVICES": self.visible_devices(ids), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}

    def minor(self, index: int) -> int:
        """The N of /dev/nvidiaN of GPU `index`: the driver's minor for its UUID, else the index itself."""
        uuid = (self.uuids() or {}).get(index)
        return self._minors.get(uuid, index) if uuid else index

    def nodes(self, ids: Sequence[int]) -> list[str]:
        """The device nodes a job holding `ids` needs (present ones only): its GPUs' and the shared ones;
        none for a job without GPUs."""
        if not ids:
            return []
        names = [f"nvidia{self.minor(i)}" for i in ids] + list(SHARED_NODES)
        return [str(self.dev_dir / n) for n in names if os.path.exists(self.dev_dir / n)]

    def machine_problem(self, ids: Sequence[int]) -> str:
        """Why `executor.gpus=ids` names GPUs this machine does not have, or ""."""
        if not ids:
            return ""
        uuids = self.uuids()
        if uuids is not None:
            missing = [i for i in ids if i not in uuids]
            have = len(uuids)
            source = "nvidia-smi: " + (", ".join(f"GPU {i}" for i in sorted(uuids)) or "no GPU")
        else:
            missing = [i for i in ids if not (self.dev_dir / f"nvidia{i}").exists()]
            found = nvidia_gpu_nodes(self.dev_dir)
            have = len(found)
            source = f"no nvidia-smi; GPU nodes {self.dev_dir}/nvidia<N>: {found or 'none'}"
        if not missing:
            return ""
        return (f"executor.gpus={list(ids)} but this machine has {have} GPU{'s' if have != 1 else ''} "
                f"({source}): GPU(s) {missing} do not exist; give executor.gpus the ids of GPUs this machine has"
                + (f" (e.g. executor.gpus={list(range(have))[:len(ids)]})" if have else ", or run a CPU task"))

    def holders(self, ids: Sequence[int], job_pids: Collection[int]) -> Optional[list[int]]:
        """Pids nvidia-smi lists on GPUs `ids` that belong to the job (seen among its processes, or no
        longer alive: a dead process still listed is the driver still tearing it down); None without
        nvidia-smi."""
        if not self.smi or not ids:
            return None
        uuids = self.uuids() or {}
        wanted = {uuids[i] for i in ids if i in uuids}
        rows = run_smi(self.smi, "--query-compute-apps=pid,gpu_uuid")
        if rows is None or not wanted:
            return None
        return sorted({pid for pid, uuid in parse_apps(rows)
                       if uuid in wanted and (pid in job_pids or not os.path.exists(f"/proc/{pid}"))})

    def wait_released(self, ids: Sequence[int], job_pids: Collection[int],
                      timeout_s: float = RELEASE_WAIT_S) -> bool:
        """Wait until nvidia-smi lists no process of the job on `ids`, at most `timeout_s`; False when
        some still held GPU memory then (True also where nvidia-smi cannot tell)."""
        deadline = time.monotonic() + timeout_s
        while True:
            held = self.holders(ids, job_pids)
            if not held:
                return True
            if time.monotonic() >= deadline:
                log.warning("GPU(s) %s still list the finished job's process(es) %s after %.1f s", list(ids), held,
                            timeout_s)
                return False
            time.sleep(_RELEASE_POLL_S)
