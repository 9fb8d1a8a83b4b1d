"""Read one run directory into a `RunRecord`: summary, journal nodes, final test, config, blobs.

Everything comes from the run's own files (never the live workspace, which may have changed since).
Journals come from runs of hostile agent code and may be torn by a kill: a torn last line is ignored
(as a resuming run would); a run that cannot be read at all raises ValueError naming why (selection
lists it under "not scored"). Nothing here writes to the run directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.records.journal import BASELINE_ID, OK, BlobStore, Node, read_records
from researchbench.benchmark.records.kinds import Final, Finished
from researchbench.benchmark.records.summary import SUMMARY_FILE, MetricRecord, RunSummary, read_summary
from researchbench.benchmark.records.sweep_jobs import is_sweep_dir, sweep_run_dirs
from researchbench.benchmark.scoring import keys

SKIP_DIRS = {".multirun", "llm_cache", "blobs", "scratch", "best_solution", "metric_reports"}


MetricInfo = MetricRecord  # the task metric as the run recorded it; the name scoring has always used


def budget_label(summary: RunSummary) -> str:
    """The budget a run had, as a grouping key: experiments, USD and compute hours ('?' where unrecorded)."""
    lim = summary.budget.limits
    usd = "?" if lim.usd is None else f"{lim.usd:g}"
    hours = "?" if lim.compute_hours is None else f"{lim.compute_hours:g}"
    return f"{lim.experiments}exp/${usd}/{hours}h"


@dataclass
class RunRecord:
    """One run as the scorer sees it."""

    run_dir: Path
    summary: RunSummary  # summary.raw is the file's whole object
    nodes: list[Node]  # finished nodes in the order they finished (the baseline first)
    final: Final | None  # the journal's final record: the hidden-test results
    config: dict[str, Any]
    metric: MetricInfo
    domain: str
    warnings: list[str] = field(default_factory=list)
    repeat: int = 0  # the how-many-th run of its group and seed, by finish time (set by selection)

    @property
    def agent(self) -> str:
        return self.summary.agent

    @property
    def task(self) -> str:
        return self.summary.task

    @property
    def seed(self) -> int:
        return self.summary.seed

    @property
    def budget_steps(self) -> int:
        return self.summary.budget.limits.experiments

    @property
    def budget_label(self) -> str:
        return budget_label(self.summary)

    @property
    def task_version(self) -> str:
        """The task manifest's version the run used ('unknown' for summaries written before it was recorded)."""
        version = self.summary.task_version or self.summary.provenance.get("task_version")
        return str(version) if version else "unknown"

    @property
    def environment_label(self) -> str:
        """Where the run's numbers were made: 'lock <digest>', with ' (differs: ...)' when the machine did not
        match its lock; 'unrecorded' for runs older than the lock (benchmark.tasks.lock)."""
        env = self.summary.provenance.get("environment")
        if not isinstance(env, dict) or not env.get("lock"):
            return "unrecorded"
        label = f"lock {env['lock']}"
        if not env.get("matches_lock", True):
            diffs = [str(d) for d in env.get("differences") or []]
            label += f" (differs: {', '.join(diffs[:3])}{' ...' if len(diffs) > 3 else ''})"
        return label

    @property
    def uses_llm(self) -> bool:
        """Whether the run asked an LLM, as it recorded it (keys.uses_llm)."""
        return keys.uses_llm(self.summary.raw, self.nodes)

    @property
    def config_label(self) -> str:
        return keys.config_label(self.config, self.uses_llm)

    @property
    def llm_label(self) -> str:
        return keys.llm_source(self.config, self.uses_llm)

    @property
    def finished_at(self) -> float:
        """When the run ended: its final record's time, else the summary's last update (epoch seconds)."""
        for value in (self.final.at if self.final is not None else None, self.summary.updated_at):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
        try:
            return (self.run_dir / SUMMARY_FILE).stat().st_mtime
        except OSError:
            return 0.0

    @property
    def blobs(self) -> BlobStore:
        return BlobStore(self.run_dir / "blobs")

    def text(self, digest: str, limit: int | None = None) -> str:
        """A blob as text ('' when absent: a run dir copied without blobs still scores)."""
        if not digest or not isinstance(digest, str) or not all(c in "0123456789abcdef" for c in digest):
            return ""
        try:
            data = self.blobs.get(digest)
        except OSError:
            return ""
        if limit is not None and len(data) > limit:
            return data[:limit].decode(errors="replace") + f"\n... ({len(data) - limit} more bytes not shown)"
        return data.decode(errors="replace")

    def files(self, node: Node) -> dict[str, str]:
        return {rel: self.text(digest) for rel, digest in sorted(node.files.items())}

    @property
    def baseline(self) -> Node | None:
        return next((n for n in self.nodes if n.id == BASELINE_ID), None)

    @property
    def experiments(self) -> list[Node]:
        """Executed search nodes (not the baseline), in finish order: FML-bench's `val_steps`."""
        return [n for n in self.nodes if n.executed and n.id != BASELINE_ID]

    @property
    def best(self) -> Node | None:
        """The node the run itself chose as best (by validation, earliest on ties)."""
        best_id = self.summary.best.node
        return next((n for n in self.nodes if n.id == best_id), None) if best_id is not None else None

    def score(self, which: str, split: str) -> float | None:
        """The summary's baseline or best ('baseline'|'best') val or test score ('val'|'test'), or None."""
        scores = {"baseline": self.summary.baseline, "best": self.summary.best}[which]
        return {"val": scores.val, "test": scores.test}[split]


def find_runs(root: Path) -> list[Path]:
    """Every run directory (one holding summary.json) under root, in a stable order; for a sweep's folder
    (`results/.multirun/<time>`), the runs its jobs named (benchmark.records.sweep_jobs)."""
    root = Path(root)
    if not root.exists():
        raise UserError(f"{root} does not exist; pass a results directory such as results/ or results/optuna")
    if is_sweep_dir(root):
        runs = [run for run in sweep_run_dirs(root) if (run / SUMMARY_FILE).is_file()]
        if not runs:
            raise UserError(f"no run of the sweep {root} has a summary.json yet; resume the sweep (the same "
                            f"command) or pass its results folder")
        return runs
    runs = sorted(p.parent for p in root.rglob(SUMMARY_FILE) if not SKIP_DIRS & set(p.relative_to(root).parts))
    if not runs:
        raise UserError(f"no runs under {root} (no summary.json found); run run_agent_benchmark.py first")
    return runs


def _journal(path: Path) -> tuple[list[Node], Final | None, list[str]]:
    """Finished nodes and the final record (the journal's one reader, benchmark/records/journal.py); a torn
    last line is ignored, a bad middle line is an error (BadRecord, a ValueError naming the line)."""
    if not path.exists():
        return [], None, ["no journal.jsonl"]
    records, torn = read_records(path)
    nodes = {r.node.id: r.node for r in records if isinstance(r, Finished)}
    final = next((r for r in reversed(records) if isinstance(r, Final)), None)
    return list(nodes.values()), final, ["journal's last line is torn (ignored)"] if torn else []


def _manifest_facts(task: str) -> tuple[str, float | None]:
    """Domain and best_possible from the task manifest, for summaries written before they were recorded."""
    try:
        from researchbench.benchmark.plugins.manager import get_registry
        from researchbench.benchmark.tasks.manifest import load_task

        spec = load_task(get_registry().tasks[task])
        return spec.domain, spec.metric.best_possible
    except Exception:  # an unknown or broken task: its runs still score, as domain 'unknown'
        return "unknown", None


def load_run(run_dir: Path) -> RunRecord:
    """Read one run; ValueError (with the reason) when its files cannot be scored (the summary's reader,
    benchmark.records.summary, raises SummaryError, a ValueError naming the file)."""
    run_dir = Path(run_dir)
    return record_of(run_dir, read_summary(run_dir))


def record_of(run_dir: Path, summary: RunSummary) -> RunRecord:
    """The run at `run_dir` with its summary already read (the viewer reads it through its own confinement);
    the journal is `journal.jsonl`, or the gzipped `journal.jsonl.gz` a recording keeps."""
    journal = run_dir / "journal.jsonl"
    if not journal.exists() and (run_dir / "journal.jsonl.gz").exists():
        journal = run_dir / "journal.jsonl.gz"
    nodes, final, notes = _journal(journal)
    config: dict[str, Any] = {}
    try:
        config = yaml.safe_load((run_dir / "config.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        notes.append("config.yaml missing or unreadable (config grouped as unknown)")
    if not isinstance(config, dict):
        config = {}
    domain, metric = summary.domain, summary.metric
    if domain is None:
        domain, fallback_best = _manifest_facts(summary.task)
        if metric.best_possible is None and fallback_best is not None:
            metric = replace(metric, best_possible=float(fallback_best))
    return RunRecord(run_dir, summary, nodes, final, config, metric, str(domain), notes)


def is_ok(node: Node) -> bool:
    return node.status == OK and node.primary is not None
