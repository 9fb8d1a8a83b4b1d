"""Which run each job of a sweep (`-m`) is, written into the sweep's folder, so the scorer can take a
sweep's folder (`results/.multirun/<time>`) and score exactly its runs.

A sweep's runs live beside every other run (results_dir/agent/task/run_id), not in its folder, and a job
that resumes a finished run ("nothing to do") changes nothing in that run; so each job names its run in
`<sweep dir>/<job number>/run.json` before it starts. The path is relative to the job's folder, so a
results folder moved as a whole still scores.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from researchbench.benchmark.common.errors import UserError

JOB_RECORD = "run.json"
SWEEP_MARK = "multirun.yaml"  # Hydra writes it into every sweep's folder


def record_job_run(job_dir: Path, run_dir: Path) -> None:
    """Name the job's run in its folder of the sweep (`<sweep dir>/<n>/run.json`)."""
    job_dir.mkdir(parents=True, exist_ok=True)
    relative = os.path.relpath(Path(run_dir).absolute(), Path(job_dir).absolute())
    (job_dir / JOB_RECORD).write_text(json.dumps({"run_dir": relative}) + "\n")


def is_sweep_dir(folder: Path) -> bool:
    """A sweep's own folder: Hydra's multirun.yaml is in it."""
    return (Path(folder) / SWEEP_MARK).is_file()


def sweep_run_dirs(sweep_dir: Path) -> list[Path]:
    """The run folders the jobs of a sweep named, in job order; a UserError names the fix when none did."""
    sweep_dir = Path(sweep_dir)
    jobs = sorted((p for p in sweep_dir.glob(f"*/{JOB_RECORD}") if p.parent.name.isdigit()),
                  key=lambda p: int(p.parent.name))
    runs: list[Path] = []
    for record in jobs:
        try:
            relative = json.loads(record.read_text())["run_dir"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UserError(f"{record} is unreadable ({type(exc).__name__}); pass the results folder instead "
                            f"(e.g. {sweep_dir.parent.parent})") from None
        run = (record.parent / str(relative)).resolve()
        if run not in runs:
            runs.append(run)
    if not runs:
        raise UserError(f"{sweep_dir} is a sweep's folder whose jobs name no runs (<job>/{JOB_RECORD}, written by "
                        f"sweeps since this release); pass its results folder instead (e.g. {sweep_dir.parent.parent})")
    return runs
