"""The work of `hydra/launcher=modal`: a batch of sweep jobs -> whole runs in Modal sandboxes, at most
`max_parallel` at once, each job's result a Hydra JobReturn (a Modal or network error fails that job
only; re-running the sweep resumes it)."""

from __future__ import annotations

import importlib
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from hydra.core.utils import JobReturn, JobStatus
from omegaconf import DictConfig, OmegaConf, open_dict

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.launch.modal_runs import (RemoteRun, RemoteRunSettings, harness_image, placement_problem,
                                                       run_remotely)

log = logging.getLogger(__name__)


def load_client(spec: str | None) -> Any:
    """The `modal` module (credentials checked offline first), or the client a test names."""
    if spec:
        module, _, name = spec.partition(":")
        return getattr(importlib.import_module(module), name)()
    from researchbench.benchmark.executors.modal.backend import modal_client

    return modal_client("hydra/launcher=modal")


def launch(settings: dict[str, Any], hydra_context: Any, config: DictConfig,
           job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[JobReturn]:
    from researchbench.benchmark.launch.sweep_table import run_dir
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.records.sweep_jobs import record_job_run
    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.workspace import open_prepared

    settings = {k: v for k, v in settings.items() if k != "_target_"}
    client = load_client(settings.pop("client", None))
    max_parallel = int(settings.pop("max_parallel", 8))
    remote = RemoteRunSettings(**{k: (list(v) if k == "extra_env" else v) for k, v in settings.items()})
    app = client.App.lookup(remote.app_name, create_if_missing=True)
    tag = uuid.uuid4().hex[:12]
    sweep_dir = Path(str(config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(config, sweep_dir / "multirun.yaml")
    jobs = []
    for offset, overrides in enumerate(job_overrides):
        number = initial_job_idx + offset
        hydra_cfg = hydra_context.config_loader.load_sweep_config(config, list(overrides))
        with open_dict(hydra_cfg):
            hydra_cfg.hydra.job.num = number
        cfg = OmegaConf.masked_copy(hydra_cfg, [k for k in hydra_cfg.keys() if k != "hydra"])
        task = load_task(get_registry().tasks[cfg.task.name])
        problem = placement_problem(str(cfg.executor.name), remote.agent_code_in_run)
        if problem:  # the CLI refuses this before any job; a direct Hydra caller is refused here
            raise UserError(problem)
        job_dir = sweep_dir / str(number)
        job_dir.mkdir(parents=True, exist_ok=True)
        run = RemoteRun(overrides=list(overrides), executor=str(cfg.executor.name), run_dir=run_dir(cfg),
                        workspace=open_prepared(task).root,
                        task=task, log_path=job_dir / "run.log")
        record_job_run(job_dir, run.run_dir)  # so the scorer can take the sweep's folder
        jobs.append((number, list(overrides), cfg, hydra_cfg, job_dir, run))
        log.info("modal launcher: #%d: %s", number, " ".join(overrides))
    images: dict[str, Any] = {}
    for *_, run in jobs:
        spec = harness_image(run.task, remote)
        images.setdefault(spec.key, spec.build(client))

    def one(job: tuple) -> JobReturn:
        number, overrides, cfg, hydra_cfg, job_dir, run = job
        result = JobReturn(overrides=overrides, cfg=cfg, hydra_cfg=hydra_cfg, working_dir=str(job_dir),
                           task_name=str(hydra_cfg.hydra.job.name))
        try:
            image = images[harness_image(run.task, remote).key]
            code = run_remotely(client, app, image, run, remote, tag)
        except Exception as exc:  # network, quota, auth: this job fails, the sweep goes on
            log.warning("modal launcher: job #%d failed: %s: %s", number, type(exc).__name__, exc)
            result.status, result._return_value = JobStatus.FAILED, exc
            return result
        if code == 0:
            result.status, result._return_value = JobStatus.COMPLETED, code
        else:
            result.status = JobStatus.FAILED
            result._return_value = UserError(f"job #{number} exited {code}; its output: {run.log_path}")
        return result

    with ThreadPoolExecutor(max_workers=max(1, max_parallel)) as pool:
        return list(pool.map(one, jobs))
