"""Task manifest schema versions: the current one, and how an older manifest is read and rewritten.

Schema 1 -> 2: `outputs` (the files the harness copies out of {output} for the evaluator) became
required when the evaluator moved into its own sandbox; everything else schema 2 added is optional.
A schema-1 manifest still loads: it is upgraded in memory (outputs derived from what the evaluator
reads) with a one-line notice, and `python setup.py --check <task> --migrate` rewrites the file by a
minimal text edit (comments and order kept).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.common.safefs import write_text_atomic

SCHEMA_VERSION = 2
_noticed: set[Path] = set()  # manifests whose upgrade notice was printed in this process


def _string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "text"` assignments (e.g. PREDICTIONS_FILE = "predictions.csv")."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            found |= {t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)}
    return found


def _output_dir_names(evaluator: list[Any]) -> set[str]:
    """The argparse names the evaluator gets {output} under: `--predictions-dir {output}` -> predictions_dir."""
    return {str(flag).lstrip("-").replace("-", "_") for flag, value in zip(evaluator, evaluator[1:])
            if value == "{output}" and str(flag).startswith("--")}


def _evaluator_script(evaluator: list[Any], task_dir: Path) -> Path | None:
    for part in evaluator:
        if isinstance(part, str) and part.startswith("{task_dir}/") and part.endswith(".py"):
            return task_dir / part.removeprefix("{task_dir}/")
    return None


def derive_outputs(raw: dict[str, Any], task_dir: Path) -> tuple[list[str], str]:
    """The files a schema-1 evaluator reads from {output}, and how they were found.

    From its argv (`{output}/predictions.json`), else from its source: every `<output dir> / "file"` (or
    `/ CONSTANT`) where the output dir is the name its argv hands {output} under. Failing both, the task
    runtime's conventional predictions file."""
    evaluator = raw.get("evaluator") if isinstance(raw.get("evaluator"), list) else []
    files = [part.removeprefix("{output}/") for part in evaluator
             if isinstance(part, str) and part.startswith("{output}/") and "{" not in part.removeprefix("{output}/")]
    if files:
        return files, "the evaluator's command line"
    script, names = _evaluator_script(evaluator, task_dir), _output_dir_names(evaluator)
    try:
        tree = ast.parse(script.read_text()) if script is not None and names else None
    except (OSError, SyntaxError, ValueError):
        tree = None
    if tree is not None:
        constants = _string_constants(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
                continue
            left = node.left.id if isinstance(node.left, ast.Name) else getattr(node.left, "attr", None)
            right = (node.right.value if isinstance(node.right, ast.Constant) else
                     constants.get(node.right.id) if isinstance(node.right, ast.Name) else None)
            if left in names and isinstance(right, str) and right not in files:
                files.append(right)
    if files and script is not None:
        return files, f"what {script.name} reads from {{output}}"
    from researchbench.task_runtime.outputs import PREDICTIONS  # lazily: it loads pandas

    return [PREDICTIONS], "the conventional predictions file (the evaluator names none)"


def upgrade(raw: Any, task_dir: Path) -> tuple[Any, list[str]]:
    """A schema-1 manifest as schema 2, and what changed; any other input unchanged with no changes."""
    if not isinstance(raw, dict) or raw.get("schema") != 1:
        return raw, []
    upgraded, changes = {**raw, "schema": SCHEMA_VERSION}, ["schema 1 -> 2"]
    if "outputs" not in raw:
        outputs, source = derive_outputs(raw, task_dir)
        upgraded["outputs"] = outputs
        changes.append(f"outputs: {outputs} ({source})")
    return upgraded, changes


def notice(path: Path, task: str, changes: list[str]) -> None:
    """One line per manifest and process: it was read as schema 2, and how to update the file."""
    key = path.resolve()
    if key in _noticed:
        return
    _noticed.add(key)
    print(f"notice: {path} is task schema 1, read as schema {SCHEMA_VERSION} ({'; '.join(changes[1:]) or 'no other change'}); "
          f"`python setup.py --check {task} --migrate` updates the file", file=sys.stderr)


def migrate_file(path: Path) -> list[str]:
    """Rewrite a schema-1 manifest to schema 2 in place; what changed ([] when it is not schema 1).

    A minimal text edit, so comments, order and layout stay: the `schema:` line changes and `outputs`
    goes in after the evaluator's entry. Written to a temporary file and renamed over the old one."""
    try:
        text = path.read_text()
        raw = yaml.safe_load(text)
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"{path}: cannot read it ({type(exc).__name__}); fix it, then migrate") from None
    upgraded, changes = upgrade(raw, path.parent)
    if not changes:
        return []
    lines = text.splitlines(keepends=True)
    schema_line = next((i for i, ln in enumerate(lines) if re.match(r"schema\s*:\s*1\s*(#.*)?$", ln.rstrip("\n"))), None)
    if schema_line is None:
        raise UserError(f"{path}: no top-level `schema: 1` line to rewrite; edit it by hand (see docs/tasks.md)")
    lines[schema_line] = re.sub(r"1", str(SCHEMA_VERSION), lines[schema_line], count=1)
    if "outputs" not in raw:
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        at = _after_entry(lines, "evaluator")
        lines[at:at] = ["# What the evaluator is handed: the harness copies exactly these regular files out of {output}.\n",
                        f"outputs: {json.dumps(upgraded['outputs'])}\n"]  # JSON: a YAML flow list
    try:
        write_text_atomic(path, "".join(lines))
    except OSError as exc:
        raise UserError(f"{path}: cannot rewrite it ({exc.strerror or exc}); copy the task somewhere writable, "
                        "or update the file by hand (docs/tasks.md, Schema versions)") from None
    return changes


def _after_entry(lines: list[str], key: str) -> int:
    """The index just past a top-level key's entry (its continuation lines included); the end if absent."""
    start = next((i for i, ln in enumerate(lines) if ln.startswith(f"{key}:")), None)
    if start is None:
        return len(lines)
    end = start + 1
    while end < len(lines) and lines[end][:1] in (" ", "\t"):
        end += 1
    return end
