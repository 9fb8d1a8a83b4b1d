"""Scored runs into MLflow (`compute_agent_metrics.py RESULTS --mlflow [URI]`), for researchers who keep
their results there: one MLflow run per researchbench run, in the experiment EXPERIMENT.

Each MLflow run follows MLflow's conventions: the run's own start and end (its first node's creation and
its final record, not the export's time), params (agent, task, seed, budget, LLM, ..., and every setting of
the run's resolved config flattened, `agent.max_debug_depth`, `llm.model`, ...), the framework's commit as
`mlflow.source.git.commit`, metrics (every number of the run's row in runs.csv: final hidden test,
achievement, process metrics; and the validation score per step, step 0 being the baseline), and artifacts
(the resolved config as config.yaml, the best node's files and the run's report page, all made from the
run's own records). The jobs of one sweep (`-m`, recorded in each run's provenance) are children of one
parent run named after the sweep. Re-exporting never duplicates: each MLflow run is tagged with its
run directory and a fingerprint of what was logged; an unchanged run is skipped, a changed one (a
run that went on, a new metric) replaces its older MLflow run (deleted, so `mlflow gc` can purge it).

Without a URI (or with a plain path) the store is local and beside the metric report, never in a run
directory: <out>/mlruns/ holding an SQLite database (MLflow's own file store is in maintenance mode
and refuses to open unless told to) and the artifacts. mlflow is an optional dependency (the
`tracking` extra).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import tempfile
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.scoring.export import REPORT, write_best_files
from researchbench.benchmark.scoring.report import run_html
from researchbench.benchmark.scoring.runs import RunRecord, is_ok

EXPERIMENT = "researchbench"
STORE_DIR = "mlruns"  # the default local store, in the metric report's folder
RUN_TAG = "researchbench.run_dir"
SWEEP_TAG = "researchbench.sweep_dir"  # on a sweep's parent run
GIT_TAG = "mlflow.source.git.commit"
PARENT_TAG = "mlflow.parentRunId"
PARAMS_PER_BATCH = 100  # MLflow's limit of params per log_batch call
MAX_PARAM_CHARS = 6000  # MLflow's limit of a param value
FINGERPRINT_TAG = "researchbench.fingerprint"
INSTALL = "pip install -c requirements/lock.txt -e '.[tracking]'"
NOT_METRICS = {"seed", "repeat"}  # numbers of the runs table that are identity, not measurements


def missing_mlflow() -> str:
    """Why --mlflow cannot work here ("" when it can), said before any scoring starts."""
    return "" if find_spec("mlflow") else f"--mlflow needs the mlflow package: {INSTALL}"


def local_store(uri: str | None, out: Path) -> Path | None:
    """The local folder a --mlflow value names (none given: <out>/mlruns), or None for a tracking URI."""
    if uri and (uri == "databricks" or ":" in uri.split("/", 1)[0]):  # sqlite:///, http://, file:, databricks
        return None
    return Path(uri).resolve() if uri else (out / STORE_DIR).resolve()


@dataclass(frozen=True)
class Payload:
    """Everything logged for one run, and its fingerprint (what re-export compares)."""

    params: dict[str, str]
    metrics: dict[str, float]
    series: dict[str, list[tuple[int, float]]]  # per-step metrics: name -> (step, value)
    html: str
    fingerprint: str


def metric_name(column: str) -> str:
    """A runs-table column as an MLflow metric name (letters, digits, _ - . / only)."""
    name = "".join(c if c.isalnum() or c in "_-./" else "_" for c in column.replace("@", "_at_"))
    return "_".join(part for part in name.split("_") if part)


def flat_params(config: dict[str, Any]) -> dict[str, str]:
    """The resolved config's sections (agent, llm, budget, executor, task, ...) as dotted params; lists as JSON.
    Top-level scalars (seed, paths) are left out: the identity params already say them."""
    flat: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and value:
            for key, item in value.items():
                walk(f"{prefix}.{key}", item)
        else:
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
            flat[prefix] = text if len(text) <= MAX_PARAM_CHARS else text[:MAX_PARAM_CHARS - 3] + "..."

    for section, value in config.items():
        if isinstance(value, dict):
            walk(str(section), value)
    return flat


def git_commit(run: RunRecord) -> str | None:
    """The framework commit the run recorded (without its '+dirty' mark), or None."""
    head = str(run.summary.provenance.get("framework_git") or "")
    head = head.removesuffix("+dirty")
    return head if len(head) == 40 and all(c in "0123456789abcdef" for c in head) else None


def run_times(run: RunRecord) -> tuple[int, int]:
    """The run's own start and end in epoch milliseconds: its first node's creation (else its end less its
    wall time) and its final record."""
    end = run.finished_at
    created = [n.created_at for n in run.nodes if isinstance(n.created_at, (int, float)) and n.created_at > 0]
    wall = run.summary.wall_seconds
    start = min(created) if created else end - (wall if wall is not None else 0.0)
    return int(min(start, end) * 1000), int(end * 1000)


def sweep_dir(run: RunRecord) -> str | None:
    """The folder of the sweep the run was a job of (recorded in its provenance), or None."""
    sweep = run.summary.provenance.get("sweep")
    return str(sweep["dir"]) if isinstance(sweep, dict) and sweep.get("dir") else None


def payload(run: RunRecord, row: dict[str, Any]) -> Payload:
    params = {"agent": run.agent, "task": run.task, "seed": str(run.seed), "budget": run.budget_label,
              "llm": run.llm_label, "task_version": run.task_version, "config": run.config_label,
              "variant": str(row.get("variant", run.agent)), "metric": f"{run.metric.name} ({run.metric.direction})",
              **flat_params(run.config)}
    if (sweep := sweep_dir(run)) is not None:
        params["sweep"] = sweep
    metrics = {metric_name(k): float(v) for k, v in row.items()
               if k not in NOT_METRICS and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
    val: list[tuple[int, float]] = []
    best: list[tuple[int, float]] = []
    steps = ([(0, run.baseline)] if run.baseline else []) + list(enumerate(run.experiments, 1))
    for step, node in steps:
        if not is_ok(node):
            continue
        score = float(node.primary)  # type: ignore[arg-type]
        val.append((step, score))
        best.append((step, score if not best or run.metric.better(score, best[-1][1]) else best[-1][1]))
    html = run_html(run)
    best_files = sorted(run.best.files.items()) if run.best else []
    fingerprint = hashlib.sha256(json.dumps(
        [params, metrics, val, best_files, hashlib.sha256(html.encode()).hexdigest(), run_times(run), git_commit(run)],
        sort_keys=True).encode()
    ).hexdigest()[:16]
    return Payload(params, metrics, {"val": val, "best_val_so_far": best}, html, fingerprint)


def check_store(uri: str | None, out: Path, results: Path) -> None:
    """UserError (one line) for a local store inside the results: checked before anything is scored or said."""
    folder = local_store(uri, out)
    if folder is not None and folder.is_relative_to(Path(results).resolve()):
        raise UserError(f"--mlflow {folder} is inside the results being scored; choose a folder outside them")


def export(runs: list[RunRecord], table: pd.DataFrame, uri: str | None, out: Path, results: Path,
           say: Callable[[str], None]) -> None:
    """Log each run to MLflow; UserError (one line) for a store inside the results or one MLflow refuses."""
    check_store(uri, out, results)
    folder = local_store(uri, out)
    from mlflow.exceptions import MlflowException

    for name in ("mlflow", "alembic"):  # their first-use notices (creating tables, ...) are not ours to print
        logging.getLogger(name).setLevel(logging.WARNING)  # after the import, which sets mlflow's level

    tracking = f"sqlite:///{folder / 'mlflow.db'}" if folder is not None else str(uri)
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    try:
        counts = _export(tracking, folder, runs, table)
    except MlflowException as exc:  # a refused store, an unreachable server, a bad URI
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"--mlflow {tracking}: {first}") from None
    say(f"mlflow: {counts['new']} new, {counts['updated']} updated, {counts['unchanged']} unchanged run(s) in "
        f"experiment '{EXPERIMENT}' at {tracking} (view: mlflow ui --backend-store-uri {tracking})")


def _export(tracking: str, folder: Path | None, runs: list[RunRecord], table: pd.DataFrame) -> dict[str, int]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=tracking)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    experiment_id = experiment.experiment_id if experiment else client.create_experiment(
        EXPERIMENT, artifact_location=(folder / "artifacts").as_uri() if folder is not None else None)
    logged = _logged_runs(client, experiment_id)
    rows = {str(r["run"]): r for r in table.to_dict("records")}
    counts = {"new": 0, "updated": 0, "unchanged": 0}
    parents = _sweep_parents(client, experiment_id, runs)
    for run in runs:
        key = str(run.run_dir.resolve())
        data = payload(run, rows.get(str(run.run_dir), {}))
        earlier = logged.get(key, [])
        same = next((r for r in earlier if r.data.tags.get(FINGERPRINT_TAG) == data.fingerprint), None)
        for old in earlier:  # older versions, and any export cut short before its fingerprint
            if old is not same:
                client.delete_run(old.info.run_id)
        if same is not None:
            counts["unchanged"] += 1
            continue
        _log(client, experiment_id, run, key, data, parents.get(sweep_dir(run) or ""))
        counts["updated" if earlier else "new"] += 1
    return counts


def _sweep_parents(client: Any, experiment_id: str, runs: list[RunRecord]) -> dict[str, str]:
    """One parent MLflow run per sweep among `runs` (found again by its tag on a re-export): sweep dir -> id.
    It spans its jobs' times; its name is the sweep's folder (`.multirun/<time>`)."""
    sweeps: dict[str, list[RunRecord]] = {}
    for run in runs:
        if (sweep := sweep_dir(run)) is not None:
            sweeps.setdefault(sweep, []).append(run)
    parents: dict[str, str] = {}
    for sweep, members in sorted(sweeps.items()):
        found = client.search_runs([experiment_id], filter_string=f"tags.`{SWEEP_TAG}` = '{_quoted(sweep)}'",
                                   max_results=1)
        times = [run_times(run) for run in members]
        if found:
            parents[sweep] = found[0].info.run_id
            client.set_terminated(parents[sweep], "FINISHED", end_time=max(end for _, end in times))
            continue
        name = f"sweep {Path(sweep).name} ({len(members)} jobs)"
        parent = client.create_run(experiment_id, run_name=name, start_time=min(start for start, _ in times),
                                   tags={SWEEP_TAG: sweep})
        client.log_param(parent.info.run_id, "sweep", sweep)
        client.set_terminated(parent.info.run_id, "FINISHED", end_time=max(end for _, end in times))
        parents[sweep] = parent.info.run_id
    return parents


def _quoted(text: str) -> str:
    """A value inside an MLflow filter string's single quotes."""
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _logged_runs(client: Any, experiment_id: str) -> dict[str, list[Any]]:
    """The experiment's live MLflow runs by the run directory they were exported from."""
    found: dict[str, list[Any]] = {}
    token = None
    while True:
        page = client.search_runs([experiment_id], max_results=1000, page_token=token)
        for logged in page:
            if RUN_TAG in logged.data.tags:
                found.setdefault(logged.data.tags[RUN_TAG], []).append(logged)
        token = page.token
        if not token:
            return found


def _log(client: Any, experiment_id: str, run: RunRecord, key: str, data: Payload, parent: str | None) -> None:
    """One MLflow run; the fingerprint tag goes last, so a run cut short is replaced on the next export."""
    import yaml
    from mlflow.entities import Metric, Param

    name = f"{run.agent}/{run.task}/s{run.seed} ({run.run_dir.name})"
    started, ended = run_times(run)
    tags = {RUN_TAG: key, "researchbench.run_id": run.run_dir.name}
    if (commit := git_commit(run)) is not None:
        tags[GIT_TAG] = commit
    if parent is not None:
        tags[PARENT_TAG] = parent
    mlflow_run = client.create_run(experiment_id, run_name=name, start_time=started, tags=tags)
    run_id = mlflow_run.info.run_id
    metrics = [Metric(k, v, ended, 0) for k, v in sorted(data.metrics.items())]
    metrics += [Metric(k, v, ended, step) for k, points in data.series.items() for step, v in points]
    params = [Param(k, v) for k, v in sorted(data.params.items())]
    for start in range(0, max(len(metrics), len(params), 1), PARAMS_PER_BATCH):  # 100 params, 1000 metrics a call
        end = start + PARAMS_PER_BATCH
        client.log_batch(run_id, metrics=metrics[start:end], params=params[start:end])
    client.log_text(run_id, yaml.safe_dump(run.config, sort_keys=False), "config.yaml")
    client.log_text(run_id, data.html, REPORT)
    with tempfile.TemporaryDirectory() as tmp:
        if write_best_files(run, Path(tmp) / "best_solution"):
            client.log_artifacts(run_id, str(Path(tmp) / "best_solution"), "best_solution")
    client.set_tag(run_id, FINGERPRINT_TAG, data.fingerprint)
    client.set_terminated(run_id, "FINISHED", end_time=ended)
