"""The task runtime's API as prompt text: an agent reading a driver that imports `task_runtime` sees
what each imported name does, not a mystery import (docs/tasks.md, "The task runtime")."""

from __future__ import annotations

import ast
import importlib
import inspect
from typing import Iterable


def imported_names(source: str) -> list[tuple[str, str]]:
    """(module, name) for each name a Python source imports from task_runtime or one of its modules;
    a plain `import task_runtime` stands for every public name."""
    import researchbench.task_runtime as task_runtime  # here, not at the top: it loads pandas, which a failing preflight never needs

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "task_runtime":
            found += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "task_runtime" for a in node.names):
            found += [("task_runtime", name) for name in task_runtime.__all__]
    return found


def _signature(obj: object, returns: bool) -> str:
    """`(a: int, b: str = 'x') -> T` with the annotations as written (they are strings in the runtime)."""
    sig = inspect.signature(obj)
    params = []
    for param in sig.parameters.values():
        text = param.name if param.kind != param.VAR_KEYWORD else f"**{param.name}"
        if param.annotation is not param.empty:
            text += f": {param.annotation}" if isinstance(param.annotation, str) else f": {param.annotation.__name__}"
        if param.default is not param.empty:
            text += f" = {param.default!r}"
        params.append(text)
    tail = f" -> {sig.return_annotation}" if returns and sig.return_annotation is not sig.empty else ""
    return f"({', '.join(params)}){tail}"


def _summary(obj: object) -> str:
    """The first sentence of the docstring's first paragraph."""
    paragraph = " ".join((inspect.getdoc(obj) or "").strip().split("\n\n")[0].split())
    end = paragraph.find(". ")
    return paragraph[:end + 1] if end >= 0 else paragraph


def describe(module: str, name: str) -> str:
    """`name(signature)  # first docstring sentence`, or "" for a name the runtime does not have."""
    try:
        obj = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return ""
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        head = f"class {name}({obj.__bases__[0].__name__})"
    elif inspect.isclass(obj) or callable(obj):
        try:
            head = name + _signature(obj, returns=not inspect.isclass(obj))
        except (TypeError, ValueError):
            head = name
    else:
        return f"{name} = {obj!r}"[:160]
    summary = _summary(obj)
    return head + (f"  # {summary}" if summary else "")


def runtime_api(sources: Iterable[str]) -> str:
    """The names the given sources import from task_runtime, one line each; "" when none do."""
    names = dict.fromkeys(pair for source in sources for pair in imported_names(source))
    lines = [line for line in (describe(module, name) for module, name in names) if line]
    if not lines:
        return ""
    return ("task_runtime (the harness's read-only library these files import; in the sandbox it is on "
            "PYTHONPATH, and editable files may import it too):\n```\n" + "\n".join(lines) + "\n```")
