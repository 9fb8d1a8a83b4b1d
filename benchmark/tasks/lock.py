"""The pinned environment scores belong to: `requirements/lock.txt`, and how this machine differs from it.

Why: a task's numbers depend on its libraries (scikit-learn 1.8 and 1.9 give semi_supervised's baseline
different scores), so the harness and every built-in task install from one lock, each baseline record says
which lock it was measured under, and a run in another environment says so. The lock is a pip constraints
file, every distribution pinned with `==` (`pip install -c requirements/lock.txt ...`); its digest covers the
pins only, so editing its comments changes nothing. `python setup.py --refresh-lock` rewrites it on purpose
(benchmark/authoring/lock_refresh.py; docs/environment.md).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from researchbench.benchmark.common.paths import REPO_ROOT

if TYPE_CHECKING:
    from researchbench.benchmark.tasks.manifest import TaskSpec

LOCK_PATH = REPO_ROOT / "requirements" / "lock.txt"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)\s*(?:#.*)?$")
_HEADER = re.compile(r"^#\s*(python|platform):\s*(\S+)\s*$")


def canonical(name: str) -> str:
    """PEP 503 normalised distribution name: `Scikit_Learn` and `scikit-learn` are one package."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Lock:
    pins: dict[str, str]  # canonical name -> exact version
    python: str  # "3.11": the interpreter the lock was resolved for
    platform: str  # "linux-x86_64"
    path: Path

    @property
    def digest(self) -> str:
        """12 hex digits of sha256 over the sorted pins: what a baseline record and a run name."""
        text = "\n".join(f"{name}=={version}" for name, version in sorted(self.pins.items()))
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def parse_lock(text: str, path: Path = LOCK_PATH) -> Lock:
    pins: dict[str, str] = {}
    header: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            if found := _HEADER.match(line):
                header[found.group(1)] = found.group(2)
            continue
        pin = _PIN.match(line)
        if pin is None:
            raise ValueError(f"{path}:{number}: not an exact pin `name==version`: {line!r}")
        pins[canonical(pin.group(1))] = pin.group(2)
    return Lock(pins=pins, python=header.get("python", ""), platform=header.get("platform", ""), path=path)


def read_lock(path: Path | None = None) -> Lock | None:
    """The lock, or None where there is none (a copy of the harness without its requirements folder)."""
    path = LOCK_PATH if path is None else path
    try:
        return parse_lock(path.read_text(), path)
    except FileNotFoundError:
        return None


def this_python() -> str:
    return ".".join(platform.python_version_tuple()[:2])


def this_platform() -> str:
    return f"{platform.system().lower()}-{platform.machine()}"


def _base_version(version: str) -> str:
    """`2.13.0+cpu` -> `2.13.0`: a local build label (the CPU torch wheel) is the same release."""
    return version.split("+", 1)[0]


def differences(lock: Lock | None) -> list[str]:
    """What this environment does differently from the lock, one phrase each ("scikit-learn 1.9.1 (lock
    1.8.0)"); empty when it matches. Only installed distributions that the lock pins are compared (a
    missing extra is not a difference), plus the Python version and platform the lock was resolved for."""
    if lock is None:
        return ["no lock file (requirements/lock.txt)"]
    found = []
    if lock.python and lock.python != this_python():
        found.append(f"Python {this_python()} (lock {lock.python})")
    if lock.platform and lock.platform != this_platform():
        found.append(f"platform {this_platform()} (lock {lock.platform})")
    for dist in importlib.metadata.distributions():
        name = canonical(dist.metadata["Name"] or "")
        locked = lock.pins.get(name)
        if locked is not None and _base_version(dist.version) != _base_version(locked):
            found.append(f"{name} {dist.version} (lock {locked})")
    return sorted(dict.fromkeys(found))


@dataclass(frozen=True)
class Environment:
    """Where a number was measured: the lock's digest (or "none"), whether this machine matched it, and
    the versions that move a task's numbers (benchmark.tasks.environment.requirement_versions)."""

    lock: str
    matches_lock: bool
    versions: dict[str, str]
    differences: tuple[str, ...] = ()

    def as_json(self) -> dict:
        return {"lock": self.lock, "matches_lock": self.matches_lock, "versions": dict(self.versions),
                "differences": list(self.differences)}


def current_environment(versions: dict[str, str], lock: Lock | None = None) -> Environment:
    lock = read_lock() if lock is None else lock
    diffs = tuple(differences(lock))
    return Environment(lock=lock.digest if lock else "none", matches_lock=not diffs,
                       versions={k: v for k, v in versions.items() if v != "not installed"}, differences=diffs)


def version_changes(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """"scikit-learn 1.8.0 -> 1.9.1" for every package whose version moved between two environments."""
    return [f"{name} {recorded[name]} -> {current.get(name, 'not installed')}"
            for name in recorded if _base_version(recorded[name]) != _base_version(current.get(name, ""))]


def record_environment_note(spec: TaskSpec) -> str:
    """Why a baseline record may not reproduce here, naming both environments ("recorded under
    scikit-learn 1.8.0, this machine has 1.9.1"); "" when neither the record nor the lock says why."""
    from researchbench.benchmark.tasks.environment import requirement_versions

    here = requirement_versions(spec)
    recorded = spec.baseline.environment if spec.baseline else None
    if recorded is not None:
        moved = [f"{name} {old}, this machine has {new}" for name, old, new in
                 ((n, recorded.versions[n], here.get(n, "not installed")) for n in recorded.versions)
                 if _base_version(old) != _base_version(new)]
        if moved:
            return "recorded under " + "; ".join(moved)
    drift = differences(read_lock())
    if drift:
        return "this machine differs from the lock: " + ", ".join(drift[:6]) + (" ..." if len(drift) > 6 else "")
    return ""


def missing(lock: Lock) -> list[str]:
    """Pinned distributions not installed here (an extra or a task not set up: not a difference)."""
    installed = {canonical(d.metadata["Name"] or "") for d in importlib.metadata.distributions()}
    return sorted(name for name in lock.pins if name not in installed)


def main(argv: list[str] | None = None) -> int:
    """`python -m researchbench.benchmark.tasks.lock --check`: exit 1 and one line per difference when this environment is
    not the lock's (CI runs it after installing from the lock)."""
    import argparse

    parser = argparse.ArgumentParser(description="Compare this environment with requirements/lock.txt.")
    parser.add_argument("--check", action="store_true", required=True)
    parser.parse_args(argv)
    lock = read_lock()
    diffs = differences(lock)
    for line in diffs:
        print(f"differs from the lock: {line}")
    if lock is not None:
        absent = missing(lock)
        note = f"; {len(absent)} pinned packages not installed ({', '.join(absent[:5])}{' ...' if len(absent) > 5 else ''})" \
            if absent else ""
        print(f"{'environment differs from' if diffs else 'environment matches'} requirements/lock.txt "
              f"({len(lock.pins)} pins, digest {lock.digest}){note}")
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main())
