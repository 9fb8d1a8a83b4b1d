"""What makes two runs comparable: the group key of a run and the keys that are never pooled.

A run's group is (agent, task, version, budget, llm, config). `llm` names where the agent's replies
came from (a live model, litellm's mock replies, a script, a replay of a recorded model), so runs
with different reply sources never share a mean; `version` is the task manifest's version, since a
changed target or data set makes scores incomparable; `config` hashes the rest of the agent's
configuration. Budgets, versions and reply sources are never pooled, whatever `--group-by` says.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import PurePath
from typing import Any, Iterable

GROUP_KEYS = ("agent", "task", "version", "budget", "llm", "config")
NEVER_POOLED = ("version", "budget", "llm")  # a grouping may leave these out only where they do not vary
NO_LLM = "none"
# config keys that say where or how loudly a run was written, or are their own grouping keys
_NOT_CONFIG = ("seed", "results_dir", "run_id", "quiet", "sweep_view", "task", "budget", "executor")
_LLM_BEHAVIOUR = ("temperature", "max_tokens", "operators")  # LLM settings that change replies, not the source


def _digest(value: Any, length: int = 6) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:length]


def uses_llm(summary: dict[str, Any], nodes: Iterable[Any] = ()) -> bool:
    """Whether the run asked an LLM, from what it recorded: summary.json's `uses_llm`, or for a run written
    before that was recorded, whether any LLM call was accounted (the summary's totals or a node's calls).
    Never from the agent's plugin: whether it is importable when scoring must not change a run's group."""
    recorded = summary.get("uses_llm")
    if isinstance(recorded, bool):
        return recorded
    usage = summary.get("llm") if isinstance(summary.get("llm"), dict) else {}
    return bool(usage.get("calls")) or any(getattr(node, "llm_calls", None) for node in nodes)


def llm_source(config: dict[str, Any], asks_llm: bool) -> str:
    """Where the run's replies came from, as a short label.

    `none` (the agent asks no LLM), `scripted:<file>#<hash of its path>`, `mock#<hash of the replies>`,
    `replay:<model>` (replies read back from a recording of that model), or the live model, with
    `@<api_base>` when a custom endpoint served it and any per-operator model overrides.
    """
    if not asks_llm:
        return NO_LLM
    llm = config.get("llm")
    if not isinstance(llm, dict):
        return "unknown"
    model = str(llm.get("model") or "?")
    if llm.get("script"):
        script = str(llm["script"])
        return f"scripted:{PurePath(script).name}#{_digest(script)}"
    if llm.get("mock_responses") is not None:
        return f"mock#{_digest(llm['mock_responses'])}"
    base = f"@{llm['api_base']}" if llm.get("api_base") else ""
    overrides = llm.get("operators") if isinstance(llm.get("operators"), dict) else {}
    extra = "".join(f", {op}: {o['model']}" for op, o in sorted(overrides.items())
                    if isinstance(o, dict) and o.get("model") and o["model"] != model)
    live = f"{model}{base}" + (f" ({extra[2:]})" if extra else "")
    return f"replay:{live}" if llm.get("cache") == "replay" else live


def config_label(config: dict[str, Any], asks_llm: bool) -> str:
    """A short hash of what the agent was configured to do (not seed, task, budget, paths or reply source)."""
    plain = {k: v for k, v in config.items() if k not in _NOT_CONFIG}
    llm = plain.pop("llm", None)
    if isinstance(llm, dict) and asks_llm:  # the source is its own key; sampling settings stay here
        plain["llm"] = {k: v for k, v in llm.items() if k in _LLM_BEHAVIOUR}
    return _digest(plain, 8)
