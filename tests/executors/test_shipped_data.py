"""Agent jobs cannot read the labelled datasets installed packages ship (sklearn's digits, ...)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from researchbench.benchmark.executors.local import sandbox
from researchbench.benchmark.executors.local import LocalExecutor, LocalExecutorConfig
from researchbench.benchmark.run.experiment import phase_job
from researchbench.benchmark.tasks.shipped_data import shipped_data_paths

PROBE = """
import gzip, sys
import sklearn.datasets, statsmodels.api  # the libraries still import
from pathlib import Path
for path in sys.argv[1:]:
    p = Path(path)
    if p.is_dir():
        assert not any(p.iterdir()), f"{p} lists files"
    else:
        try:
            data = p.read_bytes()
        except PermissionError:
            data = b""
        assert data == b"", f"{p} is readable"
try:
    sklearn.datasets.load_digits()
except Exception as exc:
    print("load_digits failed:", type(exc).__name__)
else:
    sys.exit("load_digits worked inside the sandbox")
print("masked", len(sys.argv) - 1)
"""


def test_shipped_data_is_found() -> None:
    names = {p.name for p in shipped_data_paths()}
    assert {"data", "images", "fair.csv"} <= names  # sklearn's data and images dirs, a statsmodels table


@pytest.mark.skipif(all(sandbox.probe_bwrap(p) for p in sandbox.bwrap_candidates(None)), reason="needs bubblewrap")
def test_val_phase_cannot_read_shipped_datasets(toy, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch" / "0001"
    (scratch / "code").mkdir(parents=True)
    (scratch / "output").mkdir()
    paths = [str(p) for p in shipped_data_paths()]
    job = phase_job(toy, "val", scratch, timeout_s=120)
    job = dataclasses.replace(job, argv=(sys.executable, "-c", PROBE, *paths))
    executor = LocalExecutor(LocalExecutorConfig(sandbox="bwrap"))
    try:
        result = executor.submit(job).result()
    finally:
        executor.shutdown()
    out, err = job.stdout_path.read_text(), job.stderr_path.read_text()
    assert result.exit_code == 0, err
    assert f"masked {len(paths)}" in out and "load_digits failed" in out
