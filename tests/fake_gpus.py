"""A machine's GPUs as the local executor sees them, faked: a /dev with NVIDIA nodes and an nvidia-smi script.

The fake nvidia-smi answers the two queries the executor makes (gpu_devices.py): `--query-gpu=index,uuid`
from its GPU list, and `--query-compute-apps=pid,gpu_uuid` from a file the test (or a job) writes; every
call is appended to a log, so a test can count them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from researchbench.benchmark.executors.gpu_devices import SHARED_NODES, GpuDevices

SMI = '''#!{python}
import sys
from pathlib import Path
here = Path(__file__).parent
with open(here / "calls.log", "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
if "--query-gpu=index,uuid" in sys.argv:
    for i, uuid in enumerate({uuids!r}):
        print(f"{{i}}, {{uuid}}")
elif "--query-compute-apps=pid,gpu_uuid" in sys.argv:
    apps = here / "apps.csv"
    print(apps.read_text() if apps.exists() else "", end="")
else:
    sys.exit(2)
'''


def fake_dev(root: Path, count: int) -> Path:
    """A /dev with nvidia0..nvidia<count-1>, the shared NVIDIA nodes and a node that is not NVIDIA's."""
    dev = root / "dev"
    dev.mkdir(parents=True, exist_ok=True)
    for name in [f"nvidia{i}" for i in range(count)] + [n for n in SHARED_NODES if n != "nvidia-caps"] + ["null"]:
        (dev / name).touch()
    (dev / "nvidia-caps").mkdir(exist_ok=True)
    return dev


def fake_smi(root: Path, uuids: list[str]) -> Path:
    """An executable nvidia-smi that lists `uuids` as GPUs 0.. and the pids of `root/smi/apps.csv`."""
    folder = root / "smi"
    folder.mkdir(parents=True, exist_ok=True)
    smi = folder / "nvidia-smi"
    smi.write_text(SMI.format(python=sys.executable, uuids=uuids))
    smi.chmod(0o755)
    return smi


def smi_calls(smi: Path, query: str = "") -> int:
    log = smi.parent / "calls.log"
    return sum(1 for line in log.read_text().splitlines() if query in line) if log.exists() else 0


def fake_devices(root: Path, count: int, uuids: list[str] | None = None) -> GpuDevices:
    """`count` fake GPUs; with `uuids`, an nvidia-smi that names them, else none (ids stand for themselves)."""
    smi = str(fake_smi(root, uuids)) if uuids is not None else ""
    return GpuDevices(dev_dir=fake_dev(root, count), smi=smi, driver_root=root / "no-driver")
