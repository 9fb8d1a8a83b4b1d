"""`python setup.py --check <task>`: everything a task must satisfy before agents are scored on it.

Each check runs through the code a benchmark run uses (`researchbench.benchmark.run.experiment.run_phase` in the
local sandbox executor), never a second runner, so a task that passes here behaves the same in a run:

  manifest               the strict manifest load (docs/tasks.md)
  description            the description names the metric
  editable               no editable glob lets agent code shadow the harness's runtime in the driver
                         (`task_runtime.py`, `task_runtime/...`, `sitecustomize.py`: the code dir comes
                         first on a driver's sys.path)
  prepare                the workspace is prepared (a no-op when it verifies)
  prepare-deterministic  a second prepare into a scratch folder writes the same bytes
  isolation              the harness's own exposure check of the val and test sandboxes
  label-probe            a probe job with exactly the val phase's sandbox walks everything it can see and
                         reports any hidden path (labels, test inputs, task folder) or any file holding a
                         label or test-input file's bytes
  baseline-val           the baseline's val phase runs, is scored, within VAL_SECONDS_LIMIT, and reports every
                         metric `metric.tie_breaks` names
  determinism            a second val run of the baseline gives the same metrics
  baseline-test          the baseline's test phase runs and is scored
  baseline-record        the manifest's `baseline` record reproduces for its first seed (skipped without one)
  target-spread          a warning, not a failure, when the target sits within the recorded baseline's seed
                         spread (a seed reaches it, or it is within SPREAD_SDS standard deviations of their mean)
  trivial:<overlay>      each `checks.trivial` overlay scores no better than the floor on val and test
  reference              (only with `reference=True`, i.e. `--check --reference`) the `checks.reference`
                         overlay reaches the target on the hidden test for every baseline seed (or
                         `checks.reference_score`, where the target is an oracle agent code cannot run)

A report holds one row per check with its time; `ok` only when none failed (a warning does not fail).
The rules added with schema 2 (`description`, and `trivial` when no overlay is declared) warn a task
written for schema 1, with the fix, for one release before they fail it (`_new_rule`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Collection, Iterator

import yaml

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.safefs import discard_tree
from researchbench.benchmark.executors.base import Executor
from researchbench.benchmark.run.experiment import Outcome, check_isolation, materialize, phase_job, run_phase
from researchbench.benchmark.scoring.normalize import headline_text
from researchbench.benchmark.tasks.lock import record_environment_note as environment_note
from researchbench.benchmark.tasks.manifest import TaskSpec, load_task
from researchbench.benchmark.tasks.variants import cpu_fallback
from researchbench.benchmark.tasks.workspace import CHECKSUM_FILE, PreparedTask, prepare

# Names a driver would import from its code dir before the harness's copy (the script's dir is sys.path[0]).
RUNTIME_SHADOWS = ("task_runtime.py", "task_runtime/__init__.py", "task_runtime/isolation.py", "sitecustomize.py",
                   "usercustomize.py")

VAL_SECONDS_LIMIT = 60.0  # the baseline's val phase must fit this: CPU seconds where measured, else wall
RECORD_REL_TOL = 1e-4  # a recorded baseline score reproduces when within this relative difference...
RECORD_ABS_TOL = 1e-6  # ...or this absolute one (BLAS builds differ in the last digits)
SPREAD_SDS = 2.0  # a target this many baseline-seed standard deviations from their mean is within seed noise
FLOOR_TOL = 1e-9  # relative slack when comparing a trivial predictor with the floor (the floor is often exact)
PROBE_TIMEOUT_S = 300.0
PROBE_SKIP = ("/proc", "/sys", "/dev")  # kernel pseudo-filesystems: no task data lives there

PASS, FAIL, SKIP, WARN = "pass", "FAIL", "skip", "warn"
Log = Callable[[str], None]


@dataclass
class CheckRow:
    name: str
    status: str  # PASS, FAIL, SKIP or WARN
    seconds: float
    detail: str


@dataclass
class TaskCheckReport:
    task: str
    rows: list[CheckRow] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed

    @property
    def failed(self) -> list[str]:
        return [row.name for row in self.rows if row.status == FAIL]

    @property
    def warned(self) -> list[str]:
        return [row.name for row in self.rows if row.status == WARN]

    def table(self) -> str:
        width = max([len(r.name) for r in self.rows] + [5])
        lines = [f"{self.task}: {'check':<{width}}  status   time  detail"]
        for r in self.rows:
            lines.append(f"  {r.name:<{width}}  {r.status:<6} {r.seconds:6.1f}s  {r.detail}")
        counts = {s: sum(r.status == s for r in self.rows) for s in (PASS, FAIL, SKIP, WARN)}
        total = sum(r.seconds for r in self.rows)
        verdict = "ok" if self.ok else f"FAILED ({', '.join(self.failed)})"
        warned = f", {counts[WARN]} warned ({', '.join(self.warned)})" if counts[WARN] else ""
        lines.append(f"{self.task}: {counts[PASS]} passed, {counts[FAIL]} failed, {counts[SKIP]} skipped{warned} "
                     f"in {total:.1f}s: {verdict}")
        return "\n".join(lines)


class _Failed(Exception):
    """A check's failure, with the one line the table shows."""


class _Skipped(Exception):
    """A check that does not apply (or cannot run because an earlier one failed)."""


class _Warning(Exception):
    """A finding the author should act on that does not make the task unusable: the row warns, the check passes."""


_PRODUCED_BY = {"spec": "manifest", "prepared": "prepare", "val": "baseline-val", "test": "baseline-test"}


class _Checker:
    """Runs the checks of one task in order, recording a row for each."""

    def __init__(self, task_dir: Path, executor: Executor, root: Path | None, log: Log, skip: Collection[str] = (),
                 val_seconds_limit: float | None = VAL_SECONDS_LIMIT, reference: bool = False, legacy: bool = False,
                 fallback: bool = False):
        self.task_dir, self.executor, self.root, self.log, self.skip = task_dir, executor, root, log, set(skip)
        self.cpu_fallback = fallback
        self.legacy = legacy or written_for_schema_1(task_dir)
        self.val_seconds_limit, self.with_reference = val_seconds_limit, reference
        self.report = TaskCheckReport(task=task_dir.name)
        self.spec: TaskSpec | None = None
        self.prepared: PreparedTask | None = None
        self.scratch_root = Path(tempfile.mkdtemp(prefix="researchbench-check-"))
        os.chmod(self.scratch_root, 0o755)
        self.val: Outcome | None = None
        self.test: Outcome | None = None

    def row(self, name: str, check: Callable[[], str], needs: tuple[str, ...] = ()) -> None:
        started = time.perf_counter()
        missing = [n for n in needs if getattr(self, n) is None]
        try:
            if missing:
                names = " and ".join(_PRODUCED_BY[n] for n in missing)
                raise _Skipped(f"not run: needs {names}, which failed or was skipped")
            if name in self.skip or name.split(":")[0] in self.skip:
                raise _Skipped("not selected")
            status, detail = PASS, check()
        except _Failed as exc:
            status, detail = FAIL, str(exc)
        except _Skipped as exc:
            status, detail = SKIP, str(exc)
        except _Warning as exc:
            status, detail = WARN, str(exc)
        except UserError as exc:
            status, detail = FAIL, str(exc)
        row = CheckRow(name, status, round(time.perf_counter() - started, 2), detail)
        self.report.rows.append(row)
        self.log(f"  {row.name}: {row.status} ({row.seconds:.1f}s) {row.detail}")

    def run(self) -> TaskCheckReport:
        try:
            self.row("manifest", self.manifest)
            self.row("description", self.description, needs=("spec",))
            self.row("editable", self.editable, needs=("spec",))
            self.row("prepare", self.prepare, needs=("spec",))
            self.row("prepare-deterministic", self.prepare_deterministic, needs=("prepared",))
            self.row("isolation", self.isolation, needs=("prepared",))
            self.row("label-probe", self.label_probe, needs=("prepared",))
            self.row("baseline-val", self.baseline_val, needs=("prepared",))
            self.row("determinism", self.determinism, needs=("val",))
            self.row("baseline-test", self.baseline_test, needs=("prepared",))
            self.row("baseline-record", self.baseline_record, needs=("val", "test"))
            self.row("target-spread", self.target_spread, needs=("spec",))
            trivial = self.spec.checks.trivial if self.spec else ()
            for overlay in trivial:
                self.row(f"trivial:{overlay}", lambda o=overlay: self.trivial(o), needs=("prepared",))
            if self.spec is not None and not trivial:
                self.row("trivial", self.no_trivial)
            if self.with_reference:
                self.row("reference", self.reference, needs=("prepared",))
        finally:
            discard_tree(self.scratch_root)
        return self.report

    # -- the checks ------------------------------------------------------------------------------------------

    def manifest(self) -> str:
        spec = load_task(self.task_dir)
        if self.cpu_fallback:
            spec = cpu_fallback(spec)
        self.report.task = spec.name
        self.spec = spec
        m = spec.metric
        best = f", best possible {m.best_possible:g}" if m.best_possible is not None else ""
        return f"metric {m.name} ({m.direction}), floor {m.floor:g}, target {m.target:g}{best}"

    def _new_rule(self, problem: str) -> Exception:
        """A rule added with schema 2: a task written for schema 1 gets a warning with the fix for one release
        (its author followed the docs of its day), any other task fails."""
        if self.legacy:
            return _Warning(f"{problem} (a rule since schema 2: this schema-1 task passes with this warning "
                            f"until the next release, then fails; see the CHANGELOG)")
        return _Failed(problem)

    def description(self) -> str:
        assert self.spec is not None
        text = self.spec.description_text()
        if self.spec.metric.name.lower() not in text.lower():
            raise self._new_rule(f"{self.spec.description} never names the metric '{self.spec.metric.name}'; "
                                 "describe it, its direction and the task's limits")
        return f"{self.spec.description} names the metric '{self.spec.metric.name}' ({len(text.split())} words)"

    def editable(self) -> str:
        assert self.spec is not None
        shadowing = [name for name in RUNTIME_SHADOWS if self.spec.is_editable(name)]
        if shadowing:
            raise _Failed(f"editable globs {list(self.spec.editable)} let agent code write {shadowing[0]}, which "
                          "the driver would import instead of the harness's (the code dir comes first on its "
                          "sys.path); name the editable files instead (e.g. model.py)")
        return f"{len(self.spec.editable)} editable glob(s), none shadows the runtime"

    def prepare(self) -> str:
        assert self.spec is not None
        self.prepared = prepare(self.spec, root=self.root, log=lambda _: None)
        return f"{self.prepared.root}"

    def prepare_deterministic(self) -> str:
        assert self.spec is not None and self.prepared is not None
        second = prepare(self.spec, root=self.scratch_root / "prepare-again", force=True, log=lambda _: None)
        first_files = _recorded(self.prepared.root)
        second_files = _recorded(second.root)
        discard_tree(self.scratch_root / "prepare-again")
        differ = sorted(rel for rel in first_files.keys() | second_files.keys()
                        if first_files.get(rel) != second_files.get(rel))
        if differ:
            raise _Failed(f"a second prepare wrote different files: {', '.join(differ[:3])}"
                          f"{' ...' if len(differ) > 3 else ''}; seed every random draw and fix float formats")
        return f"a second prepare wrote the same {len(first_files)} files"

    def isolation(self) -> str:
        assert self.prepared is not None
        check_isolation(self.prepared, self.executor, self.scratch_root / "isolation")
        return "no hidden path inside the val or test sandbox's mounts"

    def label_probe(self) -> str:
        assert self.prepared is not None
        if getattr(self.executor, "sandbox_mode", "") == "none":
            raise _Failed("no sandbox (bubblewrap is unusable here): labels are protected only by file permissions")
        report = probe_val_phase(self.prepared, self.executor, self.scratch_root / "probe", _seed(self.spec))
        if report["findings"]:
            shown = "; ".join(report["findings"][:3])
            more = f" (+{len(report['findings']) - 3} more)" if len(report["findings"]) > 3 else ""
            raise _Failed(f"the val phase can reach hidden data: {shown}{more}")
        return (f"walked {report['entries']:,} visible entries: no hidden path, "
                f"no file with a label or test-input file's bytes")

    def baseline_val(self) -> str:
        outcome = self._phase({}, "val", "baseline-val")
        self.val = outcome
        limit = self.val_seconds_limit
        # CPU time where the executor measures it (what the step limit binds), so machine load cannot fail it
        used, clock = ((outcome.cpu_seconds, "CPU ") if outcome.cpu_seconds is not None else (outcome.seconds, ""))
        if limit is not None and used > limit:
            raise _Failed(f"took {used:.1f} {clock}s, over the {limit:g} s a baseline val phase may take")
        assert self.spec is not None
        missing = [name for name, _ in self.spec.metric.tie_breaks if name not in outcome.metrics]
        if missing:
            raise _Failed(f"metric.tie_breaks names {', '.join(missing)}, which the evaluator does not report "
                          f"(it reports {', '.join(sorted(outcome.metrics))}); name reported metrics")
        return f"{self._score(outcome)}, seed {_seed(self.spec)}"

    def determinism(self) -> str:
        assert self.val is not None
        again = self._phase({}, "val", "determinism")
        if again.metrics != self.val.metrics:
            diff = sorted(k for k in again.metrics.keys() | self.val.metrics.keys()
                          if again.metrics.get(k) != self.val.metrics.get(k))
            raise _Failed(f"two val runs with seed {_seed(self.spec)} differ in {', '.join(diff)} "
                          f"({self.val.metrics.get(diff[0])} vs {again.metrics.get(diff[0])}); "
                          "seed all randomness from --seed and avoid unordered reductions")
        return "a second val run gave the same metrics"

    def baseline_test(self) -> str:
        self.test = self._phase({}, "test", "baseline-test")
        return self._score(self.test)

    def baseline_record(self) -> str:
        assert self.spec is not None and self.val is not None and self.test is not None
        record = self.spec.baseline
        if record is None:
            raise _Skipped(f"no baseline record in the manifest (this run, seed {_seed(self.spec)}: "
                           f"val {self.val.primary!r}, test {self.test.primary!r})")
        problems = []
        for phase, outcome, recorded in (("val", self.val, record.val[0]), ("test", self.test, record.test[0])):
            assert outcome.primary is not None
            if not math.isclose(outcome.primary, recorded, rel_tol=RECORD_REL_TOL, abs_tol=RECORD_ABS_TOL):
                difference = abs(outcome.primary - recorded) / max(abs(outcome.primary), abs(recorded))
                problems.append(f"{phase} reproduced {outcome.primary!r}, recorded {recorded!r} "
                                f"(relative difference {difference:.4g}, tolerance {RECORD_REL_TOL:g})")
        if problems:
            moved = environment_note(self.spec)
            raise _Failed(f"seed {record.seeds[0]} does not reproduce the record: {'; '.join(problems)}. "
                          + (f"{moved}: install from the lock (docs/environment.md), or refresh the lock and its "
                             "records on purpose with `python setup.py --refresh-lock`" if moved else
                             "Record the reproduced values exactly as printed (re-measure every seed) in task.yaml's "
                             "baseline, bumping its version if the task changed; if the record was exact and the "
                             "task is unchanged, the score depends on the machine (thread counts, BLAS): pin what "
                             "differs"))
        return f"seed {record.seeds[0]} reproduces val {record.val[0]!r} and test {record.test[0]!r}"

    def target_spread(self) -> str:
        assert self.spec is not None
        record, metric = self.spec.baseline, self.spec.metric
        if record is None:
            raise _Skipped("no baseline record in the manifest")
        scores = record.test
        mean = statistics.fmean(scores)
        sd = statistics.stdev(scores) if len(scores) > 1 else 0.0
        spread = f"mean {mean:.6g}, SD {sd:.3g}" if len(scores) > 1 else "one seed, record more to measure the spread"
        shown = f"baseline test {', '.join(f'{s:.6g}' for s in scores)} on {_seed_list(record.seeds)}: {spread}"
        reached = [seed for seed, score in zip(record.seeds, scores) if not metric.better(metric.target, score)]
        if reached or abs(metric.target - mean) <= SPREAD_SDS * sd:
            why = (f"the baseline reaches it on {_seed_list(reached)}" if reached
                   else f"it is within {SPREAD_SDS:g} SD of their mean")
            raise _Warning(f"the target {metric.target:g} sits within the baseline's seed spread ({shown}; {why}): "
                           "a target the baseline reaches by luck of the seed is no target; set it to what a "
                           "research-level change reaches (docs/tasks.md, Headroom)")
        return f"the target {metric.target:g} lies outside the baseline's seed spread ({shown})"

    def trivial(self, overlay: str) -> str:
        assert self.spec is not None
        files = overlay_files(self.spec, overlay)
        metric = self.spec.metric
        scores = {}
        for phase in ("val", "test"):
            outcome = self._phase(files, phase, f"trivial-{phase}")
            assert outcome.primary is not None
            scores[phase] = outcome.primary
        beats = [p for p, s in scores.items() if metric.better(s, _slack(metric.floor, metric.higher_is_better))]
        shown = ", ".join(f"{p} {s:.6g}" for p, s in scores.items())
        if beats:
            raise _Failed(f"this trivial predictor beats the floor {metric.floor:g} on {' and '.join(beats)} ({shown}); "
                          "the floor must be what a trivial predictor scores: re-measure it")
        return f"{shown}: no better than the floor {metric.floor:g}"

    def reference(self) -> str:
        assert self.spec is not None
        overlay = self.spec.checks.reference
        if overlay is None:
            raise _Failed("the manifest declares no checks.reference overlay: a solution that reaches the target "
                          "on the hidden test is what proves the target attainable (docs/tasks.md)")
        files = overlay_files(self.spec, overlay)
        metric = self.spec.metric
        seeds = self.spec.baseline.seeds if self.spec.baseline is not None else (0,)
        scores = {seed: self._phase(files, "test", f"reference-{seed}", seed).primary for seed in seeds}
        shown = ", ".join(f"seed {seed}: {score:.6g}" for seed, score in scores.items())
        # The target, or where the target is an oracle agent code cannot run, checks.reference_score.
        goal, name = ((metric.target, "target") if self.spec.checks.reference_score is None
                      else (self.spec.checks.reference_score, "reference score"))
        short = [seed for seed, score in scores.items() if metric.better(_slack(goal, not metric.higher_is_better), score)]
        if short:
            raise _Failed(f"the reference misses the {name} {goal:g} on the hidden test ({shown}): "
                          f"improve the reference or re-measure the {name}")
        return f"{shown}: reaches the {name} {goal:g} on every baseline seed"

    def no_trivial(self) -> str:
        raise self._new_rule("the manifest declares no checks.trivial overlay (a constant or majority predictor); "
                             "add one so the floor is tested (docs/tasks.md)")

    # -- helpers ---------------------------------------------------------------------------------------------

    def _phase(self, files: dict[str, str], phase: str, label: str, seed: int | None = None) -> Outcome:
        assert self.prepared is not None and self.spec is not None
        budget = self.spec.budget
        timeout = budget.step_timeout_s if phase == "val" else budget.final_test_timeout_s()
        outcome = run_phase(self.prepared, files, phase, self.executor, self.scratch_root / label, timeout,
                            _seed(self.spec) if seed is None else seed)
        if not outcome.ok:
            tail = outcome.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
            raise _Failed(f"the {phase} phase failed: {outcome.bug_reason}"
                          f"{' (stderr: ' + tail[0][:200] + ')' if tail[0] else ''}")
        return outcome

    def _score(self, outcome: Outcome) -> str:
        assert self.spec is not None and outcome.primary is not None
        m = self.spec.metric
        unclipped = m.normalized(outcome.primary)
        return (f"{m.name} {outcome.primary:.6g} (achievement {headline_text(m, outcome.primary)}, unclipped "
                f"{unclipped:.2f}) in {outcome.seconds:.1f}s")


def _seed(spec: TaskSpec | None) -> int:
    """The seed the baseline runs with: the record's first, so the record can be compared; else 0."""
    return spec.baseline.seeds[0] if spec is not None and spec.baseline is not None else 0


def _seed_list(seeds: Collection[int]) -> str:
    return f"seed{'s' * (len(seeds) > 1)} {', '.join(map(str, seeds))}"


def _slack(floor: float, higher_is_better: bool) -> float:
    """The floor moved by FLOOR_TOL towards 'worse': equal-to-the-floor within rounding does not beat it."""
    delta = abs(floor) * FLOOR_TOL
    return floor + delta if higher_is_better else floor - delta


def _recorded(task_root: Path) -> dict[str, str]:
    return json.loads((task_root / CHECKSUM_FILE).read_text())["files"]


def _files_under(folder: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if not name.endswith((".pyc", ".pyo")):
                yield Path(dirpath, name)


def overlay_files(spec: TaskSpec, overlay: str) -> dict[str, str]:
    """The editable files of a `checks.trivial` or `checks.reference` overlay folder, relpath -> text."""
    folder = spec.task_dir / overlay
    files = {p.relative_to(folder).as_posix(): p.read_text() for p in _files_under(folder)}
    if not files:
        raise _Failed(f"{overlay} holds no files")
    stray = [rel for rel in files if not spec.is_editable(rel)]
    if stray:
        raise _Failed(f"{overlay}/{stray[0]} is not an editable file of the task (editable: {', '.join(spec.editable)})")
    return files


def _hidden_files(prepared: PreparedTask) -> dict[str, Path]:
    """Name -> path of every file the val phase must never read: labels and test inputs."""
    found = {}
    for base in (prepared.labels_dir, prepared.test_inputs_dir):
        for path in _files_under(base):
            found[path.relative_to(prepared.root).as_posix()] = path
    return found


def probe_val_phase(prepared: PreparedTask, executor: Executor, scratch: Path, seed: int = 0) -> dict:
    """Run the leak probe as a job with the val phase's exact sandbox layout; its JSON report."""
    spec = prepared.spec
    hidden = _hidden_files(prepared)
    digests: dict[str, str] = {}
    sizes: set[int] = set()
    for name, path in hidden.items():
        data = path.read_bytes()
        if data:  # an empty file carries nothing to leak and equals every other empty file
            digests[hashlib.sha256(data).hexdigest()] = name
            sizes.add(len(data))
    paths = [str(prepared.labels_dir), str(prepared.test_inputs_dir), *(str(d) for d in spec.source_dirs),
             *(str(p) for p in hidden.values())]
    payload = json.dumps({"paths": paths, "digests": digests, "sizes": sorted(sizes), "skip": list(PROBE_SKIP)})
    source = (Path(__file__).with_name("leak_probe.py")).read_text()
    discard_tree(scratch)
    (scratch / "output").mkdir(parents=True)
    try:
        owned = materialize(prepared, {}, scratch / "code")
        job = phase_job(prepared, "val", scratch, PROBE_TIMEOUT_S, owned, seed)
        job = replace(job, argv=(sys.executable, "-I", "-c", source, payload))
        result = executor.submit(job).result()
        stdout = job.stdout_path.read_bytes() if job.stdout_path.exists() else b""
        if not result.ok:
            stderr = job.stderr_path.read_bytes().decode(errors="replace").strip().splitlines()[-1:]
            raise _Failed(f"the probe job did not finish (exit {result.exit_code}, timed out {result.timed_out}, "
                          f"{result.error or result.violation or (stderr[0] if stderr else 'no output')})")
        try:
            return json.loads(stdout.decode().strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise _Failed("the probe job wrote no report") from None
    finally:
        discard_tree(scratch)


def visible_gpu_ids() -> list[int]:
    """nvidia-smi's ids of the GPUs CUDA_VISIBLE_DEVICES names (by index or UUID) when it is set, else one per
    NVIDIA device node of this host."""
    from researchbench.benchmark.executors.gpu_devices import GpuDevices, nvidia_gpu_nodes

    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        return list(range(len(nvidia_gpu_nodes())))
    names = [v.strip() for v in env.split(",") if v.strip()]
    by_uuid = {uuid: i for i, uuid in (GpuDevices().uuids() or {}).items()} if any(not v.isdigit() for v in names) else {}
    return [int(v) if v.isdigit() else by_uuid[v] for v in names if v.isdigit() or v in by_uuid]


def default_executor(spec_dir: Path | None = None) -> Executor:
    """The local sandbox executor runs use, with GPU slots when the task asks for GPUs and some are visible."""
    from researchbench.benchmark.executors.local import LocalExecutor, LocalExecutorConfig

    gpus: list[int] = []
    if spec_dir is not None:
        try:
            wanted = load_task(spec_dir).resources.gpus
        except UserError:
            wanted = 0
        if wanted:
            gpus = visible_gpu_ids()[:wanted]
    return LocalExecutor(LocalExecutorConfig(gpus=gpus))


def written_for_schema_1(task_dir: Path) -> bool:
    """Whether the task's task.yaml says `schema: 1` (read as written, before the in-memory upgrade)."""
    try:
        raw = yaml.safe_load((Path(task_dir) / "task.yaml").read_text())
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(raw, dict) and raw.get("schema") == 1


def check_task(task_dir: Path, executor: Executor | None = None, root: Path | None = None,
               log: Log = lambda _: None, skip: Collection[str] = (),
               val_seconds_limit: float | None = VAL_SECONDS_LIMIT, reference: bool = False,
               legacy: bool = False, fallback: bool = False) -> TaskCheckReport:
    """Run every check on the task folder; the workspace goes under `root` (default: the workspace root).

    `skip` names checks to leave out (tests exercising one check use it); a check that needs the result of
    a skipped one is skipped too. `val_seconds_limit=None` reports the val phase's time without judging it
    (the test suite does: tests assert behaviour, and a shared machine's wall clock is not the task's).
    `reference=True` adds the (slow) reference-solution check. `legacy=True` (or a task.yaml of schema 1)
    turns the rules added with schema 2 into warnings with their fix, for one release. `fallback=True` checks
    a GPU-scale variant's CPU fallback (benchmark/tasks/variants.py) instead of the variant."""
    task_dir = Path(task_dir).resolve()
    own = executor is None
    executor = executor if executor is not None else default_executor(task_dir)
    try:
        return _Checker(task_dir, executor, root, log, skip, val_seconds_limit, reference, legacy, fallback).run()
    finally:
        if own:
            executor.shutdown()
