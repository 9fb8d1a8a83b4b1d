"""`python setup.py --refresh-lock`: move the pinned environment forward on purpose, and every number with it.

Why one command: a new upstream release must change nothing until someone decides it should, and when they
do, the lock, every built-in task's baseline record, the versions of the tasks whose scores moved and the
CHANGELOG must move together, or records and runs stop meaning what they say.

1. resolve: a fresh virtual environment gets torch (pinned to the lock's CPU build, or `--torch`), the
   harness with every extra and every built-in task's requirements, unpinned; its `pip freeze` is the new
   lock (requirements/lock.txt).
2. measure: that environment's Python re-runs every task's baseline record (each recorded seed, val and
   test, through the sandbox, in a fresh workspace) — `python -m researchbench.benchmark.authoring.lock_refresh
   --measure TASK` — and prints the scores with the environment they were measured under.
3. record: each task.yaml's `baseline:` block gets the new scores and environment; a task whose scores
   moved beyond `--check`'s tolerance gets a minor version bump; CHANGELOG.md gets one line per change.
Install the new lock afterwards: `pip install -c requirements/lock.txt -e ".[test,metrics,tracking]"`.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
import venv
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.paths import REPO_ROOT
from researchbench.benchmark.tasks.lock import LOCK_PATH, Lock, canonical, parse_lock, read_lock, this_platform
from researchbench.benchmark.tasks.manifest import TaskSpec, load_task
from researchbench.benchmark.tasks.requirements_check import builtin_specs, union

EXTRAS = "test,metrics,tracking"  # test pulls modal and sweeps: every extra the project has
RECORD_REL_TOL, RECORD_ABS_TOL = 1e-4, 1e-9  # what `setup.py --check` accepts as "reproduces"
CHANGELOG = REPO_ROOT / "CHANGELOG.md"
_BLOCK = re.compile(r"^baseline:[^\n]*\n(?:(?:[ \t]+[^\n]*|)\n)*", re.M)  # its indented and blank lines


def lock_text(freeze: str, python: str, platform: str) -> str:
    """The lock file from `pip freeze` output: exact pins only (editable installs and direct references
    dropped), sorted, under a header that says what it is and how to use and refresh it."""
    pins = sorted((ln.strip() for ln in freeze.splitlines()
                   if "==" in ln and not ln.startswith(("-e", "#")) and " @ " not in ln),
                  key=lambda ln: canonical(ln.split("==", 1)[0]))
    header = [
        "# researchbench's lock: the harness with every extra and every built-in task's requirements, each pinned.",
        "# A pip constraints file: pip install -c requirements/lock.txt -e \".[test,metrics,tracking]\"",
        "# Written by `python setup.py --refresh-lock` (docs/environment.md); do not edit by hand.",
        f"# python: {python}",
        f"# platform: {platform}",
        f"# resolved: {date.today().isoformat()}",
    ]
    return "\n".join(header + pins) + "\n"


def resolve(venv_dir: Path, torch: str, log=print) -> str:
    """Install everything unpinned (torch excepted) into a fresh venv; its freeze is the new lock's text."""
    venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
    python = str(venv_dir / "bin" / "python")
    plain, no_deps = union(builtin_specs())
    steps = [[f"torch=={torch}"], ["-e", f"{REPO_ROOT}[{EXTRAS}]", *plain]]
    if no_deps:
        steps.append(["--no-deps", *no_deps])
    for args in steps:
        log(f"resolve: pip install {' '.join(args)}")
        if subprocess.run([python, "-m", "pip", "install", "--quiet", *args]).returncode != 0:
            raise UserError(f"`pip install {' '.join(args)}` failed in {venv_dir}; the lock is unchanged")
    freeze = subprocess.run([python, "-m", "pip", "freeze"], capture_output=True, text=True, check=True).stdout
    version = subprocess.run([python, "-c", "import platform; print('.'.join(platform.python_version_tuple()[:2]))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    return lock_text(freeze, version, this_platform())


def measure(name: str) -> dict:
    """Every recorded seed's val and test score of one task's baseline, here, in a fresh workspace."""
    from researchbench.benchmark.executors.local import LocalExecutor, LocalExecutorConfig
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.run.experiment import run_phase
    from researchbench.benchmark.tasks.environment import requirement_versions
    from researchbench.benchmark.tasks.lock import current_environment
    from researchbench.benchmark.tasks.workspace import prepare

    spec = load_task(get_registry().tasks[name])
    if spec.baseline is None:
        return {"task": name, "skipped": "no baseline record"}
    with tempfile.TemporaryDirectory(prefix=f"refresh-{name}-") as tmp:
        os.environ["RESEARCHBENCH_WORKSPACE"] = str(Path(tmp) / "workspace")
        prepared = prepare(spec, log=lambda *_: None)
        scores: dict[str, list[float]] = {"val": [], "test": []}
        with LocalExecutor(LocalExecutorConfig()) as executor:
            for seed in spec.baseline.seeds:
                for phase in ("val", "test"):
                    timeout = spec.budget.step_timeout_s if phase == "val" else spec.budget.final_test_timeout_s()
                    outcome = run_phase(prepared, {}, phase, executor, Path(tmp) / "run" / "scratch", timeout, seed=seed)
                    if not outcome.ok or outcome.primary is None:
                        return {"task": name, "error": f"seed {seed} {phase}: {outcome.bug_reason}"}
                    scores[phase].append(float(outcome.primary))
    environment = current_environment(requirement_versions(spec))
    return {"task": name, **scores, "environment": {"lock": environment.lock, "versions": environment.versions}}


def _measure_in(python: str, name: str) -> dict:
    proc = subprocess.run([python, "-m", "researchbench.benchmark.authoring.lock_refresh", "--measure", name],
                          capture_output=True, text=True, cwd=REPO_ROOT)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"task": name, "error": f"measuring failed: {tail}"}
    return json.loads(lines[-1])


def _moved(old: tuple[float, ...], new: list[float]) -> bool:
    return len(old) != len(new) or any(not math.isclose(a, b, rel_tol=RECORD_REL_TOL, abs_tol=RECORD_ABS_TOL)
                                       for a, b in zip(old, new))


def _bump_minor(version: str) -> str:
    parts = [int(p) for p in re.findall(r"\d+", version)[:3]] + [0, 0]
    return f"{parts[0]}.{parts[1] + 1}.0"


def baseline_block(seeds: tuple[int, ...], val: list[float], test: list[float], environment: dict) -> str:
    versions = ", ".join(f'{k}: "{v}"' for k, v in environment["versions"].items())
    return (f"baseline:\n  seeds: [{', '.join(str(s) for s in seeds)}]\n"
            f"  val: [{', '.join(repr(v) for v in val)}]\n  test: [{', '.join(repr(v) for v in test)}]\n"
            f"  environment:  # where these were measured: `python setup.py --refresh-lock` writes it\n"
            f"    lock: \"{environment['lock']}\"\n    versions: {{{versions}}}\n")


def rewrite_manifest(text: str, block: str, version: str | None) -> str:
    """task.yaml with its `baseline:` block replaced (comments elsewhere kept) and, if given, a new version."""
    found = _BLOCK.search(text)
    if found is None:
        raise UserError("a task.yaml has no top-level `baseline:` block to rewrite")
    text = text[:found.start()] + block + ("\n" if text[found.end():] else "") + text[found.end():].lstrip("\n")
    if version is not None:
        text = re.sub(r'^version:\s*["\']?[^"\'\n]+["\']?\s*$', f'version: "{version}"', text, count=1, flags=re.M)
    return text


@dataclass
class Change:
    task: str
    old_version: str
    new_version: str | None  # None: the scores did not move
    detail: str


def record(spec: TaskSpec, result: dict) -> Change:
    assert spec.baseline is not None
    moved = _moved(spec.baseline.val, result["val"]) or _moved(spec.baseline.test, result["test"])
    version = _bump_minor(spec.version) if moved else None
    path = spec.home / "task.yaml"
    path.write_text(rewrite_manifest(path.read_text(), baseline_block(spec.baseline.seeds, result["val"],
                                                                      result["test"], result["environment"]), version))
    detail = (f"baseline val {spec.baseline.val[0]:.6g} -> {result['val'][0]:.6g}, test {spec.baseline.test[0]:.6g} -> "
              f"{result['test'][0]:.6g} (seed {spec.baseline.seeds[0]})" if moved else "scores unchanged")
    return Change(spec.name, spec.version, version, detail)


def changelog_lines(old: Lock | None, new: Lock, changes: list[Change]) -> list[str]:
    moved = [f"{n} {old.pins[n]} -> {v}" for n, v in sorted(new.pins.items()) if old and n in old.pins and old.pins[n] != v]
    added = [f"{n} {v}" for n, v in sorted(new.pins.items()) if not old or n not in old.pins]
    lines = [f"- The lock (requirements/lock.txt) refreshed to {new.digest}"
             + (f": {', '.join(moved)}" if moved else "") + (f"; added {', '.join(added)}" if added else "") + "."]
    lines += [f"- Task {c.task} {c.old_version} -> {c.new_version}: under lock {new.digest} its {c.detail}; "
              "scores of the two versions are not comparable." for c in changes if c.new_version]
    return lines


def add_to_changelog(lines: list[str], path: Path = CHANGELOG) -> None:
    """Insert under `## [Unreleased]` -> `### Changed` (created when missing)."""
    text = path.read_text()
    head = text.find("## [Unreleased]")
    if head < 0:
        raise UserError(f"{path} has no '## [Unreleased]' section to add the refresh's lines to")
    end = text.find("\n## [", head + 1)
    end = len(text) if end < 0 else end
    changed = text.find("### Changed\n", head, end)
    if changed < 0:
        text = text[:end].rstrip("\n") + "\n\n### Changed\n" + "\n".join(lines) + "\n" + text[end:]
    else:
        at = changed + len("### Changed\n")
        text = text[:at] + "\n".join(lines) + "\n" + text[at:]
    path.write_text(text)


def refresh(torch: str | None = None, log=print) -> int:
    old = read_lock()
    torch = torch or (old.pins.get("torch") if old else None)
    if not torch:
        raise UserError("no torch version to pin: the lock has none; pass --torch VERSION (a CPU build, e.g. 2.13.0+cpu)")
    with tempfile.TemporaryDirectory(prefix="researchbench-lock-") as tmp:
        venv_dir = Path(tmp) / "venv"
        text = resolve(venv_dir, torch, log)
        new = parse_lock(text)
        LOCK_PATH.parent.mkdir(exist_ok=True)
        LOCK_PATH.write_text(text)
        log(f"lock: {LOCK_PATH.relative_to(REPO_ROOT)} written ({len(new.pins)} pins, digest {new.digest})")
        changes, failed = [], []
        for spec in builtin_specs():
            if spec.baseline is None:
                continue
            result = _measure_in(str(venv_dir / "bin" / "python"), spec.name)
            if "error" in result:
                failed.append(f"{spec.name}: {result['error']}")
                log(f"measure: {spec.name}: FAILED {result['error']}")
                continue
            change = record(spec, result)
            changes.append(change)
            log(f"measure: {spec.name}: {change.detail}" + (f"; version {change.old_version} -> {change.new_version}"
                                                            if change.new_version else ""))
    add_to_changelog(changelog_lines(old, new, changes))
    log("CHANGELOG.md: lines added under [Unreleased] / Changed; install the new lock with "
        f"`pip install -c requirements/lock.txt -e \".[{EXTRAS}]\"` and run `python setup.py --all`")
    if failed:
        log(f"{len(failed)} task(s) could not be measured; their records are unchanged: " + "; ".join(failed))
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--measure":  # the measuring half, run by the new environment's Python
        print(json.dumps(measure(argv[1])))
        return 0
    raise SystemExit("usage: python -m researchbench.benchmark.authoring.lock_refresh --measure TASK "
                     "(the whole refresh: python setup.py --refresh-lock)")


if __name__ == "__main__":
    sys.exit(main())
