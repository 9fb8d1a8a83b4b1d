"""The task manifest (`ml_tasks/<task>/task.yaml`): the one place where facts about a task live.

Loading is strict: an unknown or misspelled key, a wrong type or a command that hands hidden data to
agent code is a `UserError` naming the file and the key, never a silent default.

A *variant* (`extends: <task>`) is the same task at another scale (the GPU suite): its folder holds a
task.yaml with only what the scale changes, its own description and, optionally, the baseline files the
scale changes (laid over the base's). It runs the base task's prepare, driver and evaluator.
"""

from __future__ import annotations

import fnmatch
import re
import string
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path, PurePosixPath
from typing import Any, Mapping, Protocol

import yaml

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.tasks.noise import Noise, parse_noise
from researchbench.benchmark.tasks.schema import SCHEMA_VERSION, notice, upgrade

# Placeholders each kind of command may use. Agent-run phases never see {labels} or {metrics};
# only the test phase sees {test_inputs}. This is how the manifest keeps hidden data hidden.
PLACEHOLDERS = {
    "val": {"python", "code", "data", "output", "phase", "seed"},
    "test": {"python", "code", "data", "test_inputs", "output", "phase", "seed"},
    "evaluator": {"python", "task_dir", "output", "labels", "metrics", "phase"},
    "prepare": {"python", "task_dir", "workspace"},
}


class Scored(Protocol):
    """What ranks a node: its primary score and every metric its evaluation reported."""

    @property
    def primary(self) -> float | None: ...

    @property
    def metrics(self) -> Mapping[str, float]: ...


@dataclass(frozen=True)
class Metric:
    name: str
    direction: str  # "lower" or "higher"
    floor: float  # score of a trivial predictor on the hidden test set: normalized score 0
    target: float  # a strong, justified result: normalized score 1
    rationale: str  # why floor and target are what they are
    best_possible: float | None = None  # the best score the metric allows (e.g. 0 error, AUROC 1)
    # Secondary metrics, in order, with their directions, that rank nodes equal on this one (a discrete
    # metric ties often: SHD, accuracy over a few hundred examples); the earliest node wins a tie they leave.
    tie_breaks: tuple[tuple[str, str], ...] = ()

    @property
    def higher_is_better(self) -> bool:
        return self.direction == "higher"

    def better(self, a: float, b: float) -> bool:
        """True when score a is strictly better than score b."""
        return a > b if self.higher_is_better else a < b

    def outranks(self, a: Scored, b: Scored) -> bool:
        """True when node ``a`` ranks strictly above node ``b``: the better primary, or on equal primaries the
        first tie-break that differs. A score missing on either side ranks nothing."""
        if a.primary is None or b.primary is None:
            return False
        if a.primary != b.primary:
            return self.better(a.primary, b.primary)
        decided = self.deciding_tie_break(a, b)
        return decided is not None and (a.metrics[decided[0]] > b.metrics[decided[0]]) == (decided[1] == "higher")

    def deciding_tie_break(self, a: Scored, b: Scored) -> tuple[str, str] | None:
        """The tie-break (name, direction) that orders two nodes equal on the primary: the first on which they
        differ; None when they tie on every one or one side lacks a tie-break before that."""
        for name, direction in self.tie_breaks:
            x, y = a.metrics.get(name), b.metrics.get(name)
            if x is None or y is None:
                return None
            if x != y:
                return name, direction
        return None

    def normalized(self, score: float) -> float:
        """0 at the floor, 1 at the target, negative below the floor (regressions are not clamped)."""
        return (score - self.floor) / (self.target - self.floor)


@dataclass(frozen=True)
class Budget:
    steps: int  # experiments (executed val runs); failed or no-op edits do not count
    compute_hours: float  # summed experiment wall time plus agents' commands (benchmark/run/commands.py)
    step_timeout_s: float  # hard timeout of one val run
    usd: float  # LLM spend cap
    test_timeout_s: float = 0.0  # final hidden-test run; 0 means 2 x step_timeout_s

    def final_test_timeout_s(self) -> float:
        return self.test_timeout_s or 2 * self.step_timeout_s


# The budget's fields and their types, read off the dataclass: the manifest's schema, the run's overrides
# (benchmark/run/config.py) and the description's placeholders all take them from here.
BUDGET_FIELDS: dict[str, type] = {f.name: {"int": int, "float": float}[str(f.type)] for f in fields(Budget)}
_PLACEHOLDER = re.compile(r"\{\{\s*budget\.(\w+)\s*\}\}")


def render_budget(text: str, budget: Budget) -> str:
    """`{{budget.<field>}}` in a task description, as this budget's value (`test_timeout_s`: the final test's
    limit, its default applied); an unknown field is a manifest error (`budget_placeholder_problem`)."""
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        return f"{budget.final_test_timeout_s() if name == 'test_timeout_s' else getattr(budget, name):g}"
    return _PLACEHOLDER.sub(value, text)


def budget_placeholder_problem(text: str) -> str:
    """The first placeholder naming no budget field, as a fix; "" when all are fine."""
    for match in _PLACEHOLDER.finditer(text):
        if match.group(1) not in BUDGET_FIELDS:
            return f"{match.group(0)} names no budget field; use one of {', '.join(BUDGET_FIELDS)}"
    return ""


@dataclass(frozen=True)
class Requirement:
    pip: str  # a pip requirement specifier, e.g. "econml>=0.15"
    no_deps: bool = False  # install with --no-deps (a dependency would drag CUDA wheels in)


@dataclass(frozen=True)
class Resources:
    gpus: int = 0
    gpu_type: str | None = None  # the GPU a remote backend should ask for ("A100-80GB"); executor.gpu wins
    cpus: int = 1
    memory_gb: float = 4.0
    disk_gb: float = 1.0  # most one job may store on the host (code dir + output dir); over it, it is killed


@dataclass(frozen=True)
class Evaluation:
    """Limits of the evaluator's own sandbox, and of what it is handed."""

    max_output_mb: float = 16.0  # a declared output over this (apparent) size makes the step invalid
    memory_gb: float = 2.0
    cpus: int = 1
    timeout_s: float = 120.0  # counted in the step's time


@dataclass(frozen=True)
class RecordedEnvironment:
    """Where a baseline record was measured: the digest of the lock it was installed from
    (benchmark.tasks.lock) and the versions that move the task's numbers."""

    lock: str
    versions: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class BaselineRecord:
    """The baseline's measured scores, one per seed (the `{seed}` its phases ran with)."""

    seeds: tuple[int, ...]
    val: tuple[float, ...]
    test: tuple[float, ...]
    environment: RecordedEnvironment | None = None  # absent in records older than the lock


@dataclass(frozen=True)
class Checks:
    """What `setup.py --check` exercises beyond the baseline."""

    # Folders (relative to the task dir) of editable-file overlays implementing trivial predictors
    # (a constant, the majority class, ...): each must score no better than the floor.
    trivial: tuple[str, ...] = ()
    # Folder of an editable-file overlay that reaches the target on the hidden test for every baseline
    # seed: proof that the target is attainable and that the evaluator can score it. Hidden from agents
    # like the rest of the task folder; `setup.py --check --reference` re-runs it.
    reference: str | None = None
    # The hidden-test score the reference must reach instead of the target, for a task whose target is an
    # oracle agent code cannot run (a classifier trained on labels agents never see, a model retrained on
    # data they never get): the script that measures that oracle is named in `metric.rationale`.
    reference_score: float | None = None


@dataclass(frozen=True)
class Repo:
    """An external baseline: a git repository at a pinned commit (FML-bench's model). The task's `code`
    folder (its harness-owned driver, ...) is laid over the checkout; `editable` names files of the result."""

    url: str  # anything `git clone` takes: https://..., file:///..., a local path
    commit: str  # the full 40-hex commit id; the baseline is exactly this tree
    subdir: str = ""  # the repository folder that becomes the code folder ("" = the whole repository)


@dataclass(frozen=True)
class Download:
    """A file fetched at prepare time, checked against a pinned sha256 before anything uses it."""

    url: str  # http(s):// or file://
    sha256: str  # 64 hex digits
    dest: str  # where prepare finds it, relative to workspace/<task>/ (outside baseline/)
    optional: bool = False  # fetched only with `setup.py --download`; the offline data stays the default


@dataclass(frozen=True)
class Data:
    public: str  # relative to workspace/<task>/: visible to val and test phases
    test_inputs: str  # visible only to the final test phase
    labels: str  # visible only to the evaluator


@dataclass(frozen=True)
class Knob:
    type: str  # "float" | "int" | "categorical"
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Knobs:
    """Hyper-parameters a non-LLM agent may set: written as JSON to `file` (an editable file)."""

    file: str
    space: dict[str, Knob]


@dataclass(frozen=True)
class TaskSpec:
    schema: int
    name: str
    version: str
    domain: str
    description: str  # path of a markdown file, relative to the task dir
    metric: Metric
    budget: Budget
    code: str  # baseline code dir, relative to the task dir
    editable: tuple[str, ...]  # globs relative to the code dir; every other file is harness-owned
    phases: dict[str, tuple[str, ...]]  # "val" and "test" argv templates, run inside the sandbox
    evaluator: tuple[str, ...]  # argv template, run by the harness in its own sandbox
    outputs: tuple[str, ...]  # files (relative to {output}) the harness copies out for the evaluator
    prepare: tuple[str, ...]  # argv template that writes data into workspace/<task>/
    data: Data
    requirements: tuple[Requirement, ...] = ()
    resources: Resources = Resources()
    evaluation: Evaluation = Evaluation()
    knobs: Knobs | None = None
    baseline: BaselineRecord | None = None
    noise: Noise | None = None  # val/test sizes and the baseline's spread (benchmark/tasks/noise.py)
    checks: Checks = Checks()
    repo: Repo | None = None
    downloads: tuple[Download, ...] = ()
    extends: str | None = None  # the task this one is a variant of (the same code at another scale)
    task_dir: Path = field(default=Path("."), compare=False)  # the folder of the task's code ({task_dir})
    manifest_dir: Path | None = field(default=None, compare=False)  # a variant's own folder (its task.yaml)

    def is_editable(self, relpath: str) -> bool:
        return any(fnmatch.fnmatchcase(relpath, pattern) for pattern in self.editable)

    def description_text(self, budget: Budget | None = None) -> str:
        """The description with its budget placeholders (`{{budget.steps}}`, ...) rendered from `budget`, by
        default this spec's: a run's task (its overrides applied) reads its own numbers, never the defaults."""
        return render_budget((self.task_dir / self.description).read_text(), budget or self.budget)

    @property
    def code_dir(self) -> Path:
        return self.task_dir / self.code

    @property
    def home(self) -> Path:
        """The folder of this task's task.yaml: a variant's own folder, else the task folder."""
        return self.manifest_dir or self.task_dir

    @property
    def code_overlay(self) -> Path | None:
        """A variant's baseline files that replace the base's (its `code` folder), if it has any."""
        folder = self.manifest_dir / self.code if self.manifest_dir else None
        return folder if folder is not None and folder.is_dir() else None

    @property
    def source_dirs(self) -> tuple[Path, ...]:
        """Every folder of task files (hidden from agent code): the task folder and a variant's own."""
        return (self.task_dir,) + ((self.manifest_dir,) if self.manifest_dir else ())


def _placeholders(argv: tuple[str, ...]) -> set[str]:
    return {name for part in argv for _, name, _, _ in string.Formatter().parse(part) if name}


def _plain_relative(path: str, allow_empty: bool = False) -> bool:
    """A relative path without '..' that stays inside the folder it is relative to."""
    if path in ("", "."):
        return allow_empty
    pure = PurePosixPath(path)
    return not pure.is_absolute() and ".." not in pure.parts and "\\" not in path


def render(argv: tuple[str, ...], **values: str) -> list[str]:
    """Fill an argv template's {placeholders}."""
    return [part.format(**values) for part in argv]


class _Reader:
    """Walks the YAML tree, turning every problem into one line that names file and key."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, key: str, problem: str) -> UserError:
        return UserError(f"{self.path}: '{key}' {problem}; see docs/tasks.md for the manifest schema")

    def mapping(self, value: Any, key: str, cls: type | None = None, required: set[str] | None = None) -> dict:
        if not isinstance(value, dict):
            raise self.fail(key, "must be a mapping")
        if cls is not None:
            known = {f.name for f in fields(cls)} - {"task_dir", "manifest_dir"}
            for k in value:
                if k not in known:
                    raise self.fail(f"{key}.{k}".lstrip("."), f"is not a known key (known: {', '.join(sorted(known))})")
            required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
        for k in sorted(required or ()):
            if k not in value:
                raise self.fail(f"{key}.{k}".lstrip("."), "is required")
        return value

    def typed(self, value: Any, key: str, kind: type | tuple[type, ...]) -> Any:
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise self.fail(key, f"must be a {name}, got {value!r}")
        return value

    def argv(self, value: Any, key: str, kind: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "must be a non-empty list of strings (an argv template)")
        argv = tuple(value)
        try:
            used = _placeholders(argv)
        except ValueError as exc:
            raise self.fail(key, f"has a malformed placeholder ({exc})") from None
        unknown = used - PLACEHOLDERS[kind]
        if unknown:
            raise self.fail(key, f"uses {{{', '.join(sorted(unknown))}}}, not allowed here "
                                 f"(allowed: {', '.join(sorted(PLACEHOLDERS[kind]))})")
        return argv


def _tie_breaks(reader: _Reader, metric: Metric) -> tuple[tuple[str, str], ...]:
    """`metric.tie_breaks` (a mapping of secondary metric to 'lower' or 'higher', in order) as pairs."""
    raw: Any = metric.tie_breaks
    pairs = tuple(raw.items()) if isinstance(raw, dict) else ()
    for name, direction in pairs:
        if not isinstance(name, str) or name == metric.name:
            raise reader.fail("metric.tie_breaks", f"names {name!r}; name secondary metrics the evaluator reports, "
                                                   "not the primary")
        if direction not in ("lower", "higher"):
            raise reader.fail(f"metric.tie_breaks.{name}", f"is {direction!r}; must be 'lower' or 'higher'")
    return pairs


def _build(reader: _Reader, cls: type, raw: Any, key: str, types: dict[str, Any]) -> Any:
    raw = reader.mapping(raw, key, cls)
    return cls(**{k: reader.typed(v, f"{key}.{k}", types[k]) for k, v in raw.items()})


# A variant's mappings that merge key by key over its base's; every other key it gives replaces the base's.
MERGED_KEYS = ("metric", "budget", "resources", "evaluation", "checks", "knobs")
# Measurements of one scale, never inherited: a variant states its own or none.
SCALE_MEASUREMENTS = ("baseline", "noise")


def _inherit(reader: _Reader, raw: dict, folder: Path) -> tuple[dict, Path]:
    """A variant's manifest merged over its base's (a sibling folder), and the base's folder."""
    base_name = reader.typed(raw["extends"], "extends", str)
    base_dir = folder.parent / base_name
    if not re.fullmatch(r"[a-z0-9][a-z0-9_\-]*", base_name) or not (base_dir / "task.yaml").is_file():
        raise reader.fail("extends", f"names {base_name!r}, which is not a task folder beside {folder.name}/")
    for key in ("name", "version"):
        if key not in raw:
            raise reader.fail(key, "is required in a variant (it is a task of its own)")
    try:
        base = yaml.safe_load((base_dir / "task.yaml").read_text())
    except yaml.YAMLError:
        raise reader.fail("extends", f"names {base_name}, whose task.yaml is not valid YAML") from None
    base, _ = upgrade(base, base_dir)
    if not isinstance(base, dict) or base.get("extends") is not None:
        raise reader.fail("extends", f"names {base_name}, which is itself a variant or unreadable; extend its base")
    merged = {k: v for k, v in base.items() if k not in SCALE_MEASUREMENTS}
    for key, value in raw.items():
        if key in MERGED_KEYS and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged, base_dir


def _located(own: Path, code_home: Path, rel: str) -> str:
    """A variant's file or folder when it has one of that name, else the base's (kept relative)."""
    if own == code_home or not (own / rel).exists():
        return rel
    return str((own / rel).resolve())


def load_task(task_dir: Path) -> TaskSpec:
    """Read and validate `<task_dir>/task.yaml`."""
    path = Path(task_dir) / "task.yaml"
    reader = _Reader(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{path} does not exist; a task folder needs a task.yaml (see docs/tasks.md)") from None
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f" at line {line + 1}" if line is not None else ""
        raise UserError(f"{path}: not valid YAML{where}; fix the syntax (see docs/tasks.md)") from None
    raw, changes = upgrade(raw, Path(task_dir))  # an older schema, read as the current one
    if changes:
        notice(path, raw["name"] if isinstance(raw.get("name"), str) else path.parent.name, changes)
    code_home = Path(task_dir)  # where the code, prepare and evaluator live: a variant's base folder
    if isinstance(raw, dict) and raw.get("extends") is not None:
        raw, code_home = _inherit(reader, raw, Path(task_dir))
    raw = reader.mapping(raw, "", TaskSpec)
    if raw["schema"] != SCHEMA_VERSION:
        raise reader.fail("schema", f"is {raw['schema']!r}; this researchbench reads schema {SCHEMA_VERSION} "
                                    f"(and schema 1, upgraded on load)")
    for key in ("name", "version", "domain", "description", "code"):
        reader.typed(raw[key], key, str)
    if not re.fullmatch(r"[a-z0-9][a-z0-9_\-]*", raw["name"]):
        raise reader.fail("name", "must be lower-case letters, digits, '_' or '-'")

    metric = _build(reader, Metric, raw["metric"], "metric",
                    {"name": str, "direction": str, "floor": float, "target": float, "rationale": str,
                     "best_possible": float, "tie_breaks": dict})
    if metric.direction not in ("lower", "higher"):
        raise reader.fail("metric.direction", "must be 'lower' or 'higher'")
    metric = replace(metric, tie_breaks=_tie_breaks(reader, metric))
    if not metric.better(metric.target, metric.floor):
        raise reader.fail("metric.target", f"must be better than the floor for direction '{metric.direction}'")
    if metric.best_possible is not None and metric.better(metric.target, metric.best_possible):
        raise reader.fail("metric.best_possible", "cannot be worse than the target")

    budget = _build(reader, Budget, raw["budget"], "budget", BUDGET_FIELDS)
    if budget.steps < 1 or budget.step_timeout_s <= 0:
        raise reader.fail("budget", "needs steps >= 1 and step_timeout_s > 0")

    editable = raw["editable"]
    if not isinstance(editable, list) or not editable or not all(isinstance(e, str) for e in editable):
        raise reader.fail("editable", "must be a non-empty list of glob strings")

    phases = reader.mapping(raw["phases"], "phases", required={"val", "test"})
    extra = set(phases) - {"val", "test"}
    if extra:
        raise reader.fail(f"phases.{sorted(extra)[0]}", "is not a known phase (known: val, test)")

    data = _build(reader, Data, raw["data"], "data", {"public": str, "test_inputs": str, "labels": str})
    requirements = []
    for i, req in enumerate(reader.typed(raw.get("requirements", []), "requirements", list)):
        if isinstance(req, str):
            requirements.append(Requirement(req))
        else:
            requirements.append(_build(reader, Requirement, req, f"requirements[{i}]", {"pip": str, "no_deps": bool}))
    resources = _build(reader, Resources, raw.get("resources", {}), "resources",
                       {"gpus": int, "gpu_type": str, "cpus": int, "memory_gb": float, "disk_gb": float})
    evaluation = _build(reader, Evaluation, raw.get("evaluation", {}), "evaluation",
                        {"max_output_mb": float, "memory_gb": float, "cpus": int, "timeout_s": float})
    for key in ("disk_gb", "memory_gb"):
        if getattr(resources, key) <= 0:
            raise reader.fail(f"resources.{key}", "must be positive")
    if min(evaluation.max_output_mb, evaluation.memory_gb, evaluation.timeout_s, evaluation.cpus) <= 0:
        raise reader.fail("evaluation", "needs positive max_output_mb, memory_gb, cpus and timeout_s")
    outputs = raw["outputs"]
    if not isinstance(outputs, list) or not outputs or not all(isinstance(o, str) for o in outputs):
        raise reader.fail("outputs", "must be a non-empty list of file names relative to {output}")
    for out in outputs:
        parts = PurePosixPath(out).parts
        if PurePosixPath(out).is_absolute() or not parts or ".." in parts or any(c in out for c in "*?[{"):
            raise reader.fail("outputs", f"entry {out!r} must be a plain relative file path (no '..', no globs)")

    baseline = None
    if raw.get("baseline") is not None:
        braw = reader.mapping(raw["baseline"], "baseline", BaselineRecord)
        seeds = tuple(reader.typed(v, "baseline.seeds[]", int) for v in reader.typed(braw["seeds"], "baseline.seeds", list))
        scores = {k: tuple(reader.typed(v, f"baseline.{k}[]", float) for v in reader.typed(braw[k], f"baseline.{k}", list))
                  for k in ("val", "test")}
        if not seeds or any(len(v) != len(seeds) for v in scores.values()):
            raise reader.fail("baseline", "needs one val and one test score per seed")
        environment = None
        if braw.get("environment") is not None:
            eraw = reader.mapping(braw["environment"], "baseline.environment", RecordedEnvironment)
            versions = reader.mapping(eraw.get("versions", {}), "baseline.environment.versions")
            environment = RecordedEnvironment(
                lock=reader.typed(eraw["lock"], "baseline.environment.lock", str),
                versions={reader.typed(k, "baseline.environment.versions", str):
                          reader.typed(v, f"baseline.environment.versions.{k}", str) for k, v in versions.items()})
        baseline = BaselineRecord(seeds=seeds, environment=environment, **scores)
    noise = parse_noise(raw["noise"], reader.fail) if raw.get("noise") is not None else None
    craw = reader.mapping(raw.get("checks", {}), "checks", Checks)
    trivial = tuple(reader.typed(v, "checks.trivial[]", str) for v in reader.typed(craw.get("trivial", []), "checks.trivial", list))
    trivial = tuple(_located(Path(task_dir), code_home, folder) for folder in trivial)
    for folder in trivial:
        if not (code_home / folder).is_dir():
            raise reader.fail("checks.trivial", f"points at {folder}, which is not a folder")
    reference = craw.get("reference")
    if reference is not None:
        reference = _located(Path(task_dir), code_home, reader.typed(reference, "checks.reference", str))
        if not (code_home / reference).is_dir():
            raise reader.fail("checks.reference", f"points at {reference}, which is not a folder")
    reference_score = craw.get("reference_score")
    if reference_score is not None:
        reference_score = reader.typed(reference_score, "checks.reference_score", float)
        if reference is None:
            raise reader.fail("checks.reference_score", "needs checks.reference (the solution that must reach it)")
        if not metric.better(reference_score, metric.floor) or metric.better(reference_score, metric.target):
            raise reader.fail("checks.reference_score", "must lie between the floor (exclusive) and the target "
                              "(inclusive): the target is the scale's 1.0, the limit")

    repo = None
    if raw.get("repo") is not None:
        repo = _build(reader, Repo, raw["repo"], "repo", {"url": str, "commit": str, "subdir": str})
        if not re.fullmatch(r"[0-9a-f]{40}", repo.commit):
            raise reader.fail("repo.commit", "must be a full 40-digit lower-case hex commit id (a pin, not a branch)")
        if not _plain_relative(repo.subdir, allow_empty=True):
            raise reader.fail("repo.subdir", f"must be a relative folder inside the repository, got {repo.subdir!r}")
    downloads = []
    for i, item in enumerate(reader.typed(raw.get("downloads", []), "downloads", list)):
        key = f"downloads[{i}]"
        download = _build(reader, Download, item, key, {"url": str, "sha256": str, "dest": str, "optional": bool})
        if not re.match(r"(https?|file)://", download.url):
            raise reader.fail(f"{key}.url", "must be an http://, https:// or file:// URL")
        if not re.fullmatch(r"[0-9a-f]{64}", download.sha256):
            raise reader.fail(f"{key}.sha256", "must be 64 lower-case hex digits (the file's sha256)")
        if not _plain_relative(download.dest) or PurePosixPath(download.dest).parts[0] == "baseline":
            raise reader.fail(f"{key}.dest", f"must be a relative file path outside baseline/, got {download.dest!r}")
        downloads.append(download)
    if len({d.dest for d in downloads}) != len(downloads):
        raise reader.fail("downloads", "has two entries with the same dest")

    knobs = None
    if raw.get("knobs") is not None:
        kraw = reader.mapping(raw["knobs"], "knobs", required={"file", "space"})
        space = {}
        for name, spec in reader.mapping(kraw["space"], "knobs.space").items():
            key = f"knobs.space.{name}"
            spec = reader.mapping(spec, key, Knob)
            if "choices" in spec:
                spec["choices"] = tuple(reader.typed(spec["choices"], f"{key}.choices", list))
            types = {"type": str, "low": float, "high": float, "log": bool, "choices": tuple}
            knob = Knob(**{k: reader.typed(v, f"{key}.{k}", types[k]) for k, v in spec.items()})
            if knob.type not in ("float", "int", "categorical"):
                raise reader.fail(f"{key}.type", "must be float, int or categorical")
            if knob.type == "categorical" and not knob.choices:
                raise reader.fail(f"{key}.choices", "must list at least one choice")
            if knob.type != "categorical" and (knob.low is None or knob.high is None or knob.low >= knob.high):
                raise reader.fail(key, "needs numeric low < high")
            space[name] = knob
        knobs = Knobs(file=reader.typed(kraw["file"], "knobs.file", str), space=space)

    spec = TaskSpec(
        schema=raw["schema"], name=raw["name"], version=raw["version"], domain=raw["domain"],
        description=_located(Path(task_dir), code_home, raw["description"]), metric=metric, budget=budget, code=raw["code"],
        editable=tuple(editable),
        phases={p: reader.argv(phases[p], f"phases.{p}", p) for p in ("val", "test")},
        evaluator=reader.argv(raw["evaluator"], "evaluator", "evaluator"), outputs=tuple(outputs),
        prepare=reader.argv(raw["prepare"], "prepare", "prepare"),
        data=data, requirements=tuple(requirements), resources=resources, evaluation=evaluation, knobs=knobs,
        baseline=baseline, noise=noise, checks=Checks(trivial=trivial, reference=reference, reference_score=reference_score), repo=repo, downloads=tuple(downloads),
        extends=raw.get("extends"), task_dir=code_home.resolve(),
        manifest_dir=Path(task_dir).resolve() if code_home != Path(task_dir) else None,
    )
    if knobs is not None and not spec.is_editable(knobs.file):
        raise reader.fail("knobs.file", f"'{knobs.file}' must match one of the editable globs")
    for rel in (spec.description, spec.code):
        if not (spec.task_dir / rel).exists():
            raise reader.fail("description" if rel == spec.description else "code", f"points at {rel}, which does not exist")
    if problem := budget_placeholder_problem((spec.task_dir / spec.description).read_text()):
        raise reader.fail("description", problem)
    return spec
