"""Torch settings a driver applies before agent code runs: the device to offer, and numerics that give
the same bits on every machine."""

from __future__ import annotations

import os
import platform

# Same bits on every x86-64 machine: torch and MKL pick their kernels by the CPU (AVX2 or AVX-512,
# vendor) and the thread count, and a different kernel rounds differently. Read when torch loads.
PORTABLE_X86 = {"ATEN_CPU_CAPABILITY": "default",  # torch's portable kernels
                "MKL_CBWR": "COMPATIBLE,STRICT",  # MKL's conditional numerical reproducibility, any x86-64
                "ONEDNN_MAX_CPU_ISA": "SSE41"}  # should agent code turn oneDNN back on
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}


def pick_device() -> str:
    """CUDA when a GPU is visible to this job, else CPU (call it in a forked child: the parent never touches CUDA)."""
    if not os.environ.get("CUDA_VISIBLE_DEVICES", "").strip():
        return "cpu"
    try:
        import torch
        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def warm_up_torch() -> None:
    """Pin torch's numerics (PORTABLE_X86, one thread, no oneDNN or NNPACK convolutions: theirs differ
    by CPU), then import torch and run one tiny optimizer step in the parent, so each forked child
    starts with torch's lazily loaded machinery (about 2 s of CPU on first use) already in memory. The
    tensors are too small to start a thread pool and CUDA is never touched, so forking afterwards is
    safe."""
    os.environ.update(ONE_THREAD)
    if platform.machine().lower() in ("x86_64", "amd64"):
        os.environ.update(PORTABLE_X86)
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)
    torch.backends.mkldnn.enabled = False
    torch.backends.nnpack.enabled = False
    layer = torch.nn.Linear(2, 2)
    for optimizer in (torch.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9), torch.optim.Adam(layer.parameters())):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(layer(torch.ones(1, 2)), torch.zeros(1, dtype=torch.long)).backward()
        optimizer.step()
