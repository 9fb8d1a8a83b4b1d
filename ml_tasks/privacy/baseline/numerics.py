"""Harness-owned: pin the math libraries' numerics before numpy (or torch) is imported.

BLAS and torch pick their kernels by the CPU (AVX2 or AVX-512, vendor) and by the thread count, and a
different kernel rounds differently; a target model trained on one machine, or a score computed there,
must come out bit for bit the same on another (CI's many-core machine reproduces the recorded scores).
`prepare.py` and `driver.py` call `pin()` first thing. Agent code changing these variables later has
no effect on libraries already loaded.
"""

from __future__ import annotations

import os
import platform
import sys

ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                      "NUMEXPR_NUM_THREADS")}
# x86-64 only: OpenBLAS's generic SSE3 kernels (every x86-64 CPU runs them; AVX2 and AVX-512 kernels
# sum in another order), torch's portable kernels, MKL's conditional numerical reproducibility. The cost:
# fitting a target model takes about a third longer than with the AVX2 kernels.
PORTABLE_X86 = {"OPENBLAS_CORETYPE": "Prescott", "ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE,STRICT",
                "ONEDNN_MAX_CPU_ISA": "SSE41"}


def pin() -> None:
    loaded = [name for name in ("numpy", "torch", "sklearn", "scipy") if name in sys.modules]
    if loaded:
        raise RuntimeError(f"numerics.pin() must run before {loaded[0]} is imported")
    os.environ.update(ONE_THREAD)
    if platform.machine().lower() in ("x86_64", "amd64"):
        os.environ.update(PORTABLE_X86)
