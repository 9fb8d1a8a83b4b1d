"""Writing a measured `noise:` block into task.yaml by a minimal text edit.

Why a text edit and not a YAML round trip: the manifest's comments, order and layout are the author's,
and other edits to the same file (the metric, the baseline record) must merge cleanly. An existing
`noise:` entry is replaced in place; a new one goes right after the `baseline:` entry and the blank
lines that follow it (at the end of the file without a baseline record).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.safefs import write_text_atomic
from researchbench.benchmark.tasks.noise import Noise, PhaseNoise

HEADER = ("# Measurement noise (docs/tasks.md): `unit` and `units` are the author's; `measured`, `val` and `test`\n"
          "# are written by `python setup.py --measure-noise {task}` (never by hand).\n")
_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}  # plain scalars YAML reads as non-strings


def _text(value: str) -> str:
    """A string as a YAML scalar: plain when it is a plain word, else JSON-quoted."""
    return value if _BARE.fullmatch(value) and value.lower() not in _YAML_WORDS else json.dumps(value)


def _flow(value: Any) -> str:
    """A YAML flow value: bare keys, JSON strings, plain numbers."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_text(str(k))}: {_flow(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return _text(str(value))


def _phase(p: PhaseNoise) -> dict[str, Any]:
    out: dict[str, Any] = {"size": p.size}
    out |= {k: v for k, v in (("sampling_sd", p.sampling_sd), ("seed_sd", p.seed_sd)) if v is not None}
    if p.parts:
        out["parts"] = p.parts
    return out


def block_text(noise: Noise) -> str:
    """The `noise:` entry (no header comment) as YAML lines."""
    units: dict[str, Any] = {"labels": list(noise.units.labels)}
    if noise.units.key:
        units["key"] = list(noise.units.key)
    if noise.units.strata:
        units["strata"] = list(noise.units.strata)
    lines = ["noise:", f"  unit: {_text(noise.unit)}", f"  units: {_flow(units)}"]
    if not noise.half_samples:
        lines.append("  half_samples: false")
    if noise.measured is not None and noise.val is not None and noise.test is not None:
        m = noise.measured
        lines.append(f"  measured: {_flow({'version': m.version, 'seeds': list(m.seeds), 'draws': m.draws})}")
        lines += [f"  val: {_flow(_phase(noise.val))}", f"  test: {_flow(_phase(noise.test))}"]
    return "\n".join(lines) + "\n"


def _entry(lines: list[str], key: str) -> tuple[int, int] | None:
    """[start, end) of a top-level key's entry: its line and the indented (or blank-then-indented) lines after."""
    start = next((i for i, ln in enumerate(lines) if re.match(rf"{key}\s*:", ln)), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines) and (lines[end][:1] in (" ", "\t") or (not lines[end].strip() and end + 1 < len(lines)
                                                                  and lines[end + 1][:1] in (" ", "\t"))):
        end += 1
    return start, end


def write_block(path: Path, noise: Noise, task: str) -> str:
    """Put the block into the manifest at `path`; 'replaced' or 'added'."""
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    block = block_text(noise).splitlines(keepends=True)
    found = _entry(lines, "noise")
    if found is not None:
        lines[found[0]:found[1]] = block
        how = "replaced"
    else:
        baseline = _entry(lines, "baseline")
        at = len(lines) if baseline is None else baseline[1]
        while at < len(lines) and not lines[at].strip():
            at += 1
        new = [*HEADER.format(task=task).splitlines(keepends=True), *block]
        if at == len(lines):
            lines[at:at] = ["\n", *new]
        else:
            lines[at:at] = [*new, "\n"]
        how = "added"
    try:
        write_text_atomic(path, "".join(lines))
    except OSError as exc:
        raise UserError(f"{path}: cannot rewrite it ({exc.strerror or exc}); copy the task somewhere writable, "
                        "or paste the printed block after its baseline entry") from None
    return how
