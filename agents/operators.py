"""LLM operators shared by the built-in agents: improve a node, or debug a failed one.

Each builds one prompt from the task, the parent's files and results and a bounded memory of recent
attempts, asks the LLM once, and applies the reply as edits. Failed or empty edits come back as a
Proposal with feedback; the engine records them without spending an experiment.
"""

from __future__ import annotations

import re
from typing import Any

from benchmark.agent_api import Action, OpContext, Proposal
from benchmark.edits import apply_edits, format_instructions
from benchmark.journal import Node

SYSTEM = (
    "You are an experienced machine-learning researcher working on a research codebase. Each of your "
    "proposals is run as one experiment in a sandbox without network access and scored on a validation "
    "set you never see directly. Be concrete, change only what your idea needs, and keep the code runnable "
    "within the time limit."
)


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "[... earlier output cut ...]\n" + text[-limit:]


def _result_line(ctx: OpContext, node: Node) -> str:
    metric = ctx.task.metric
    if node.status == "ok":
        return f"{metric.name} = {node.primary:.5g} ({metric.direction} is better)"
    if node.executed:
        return f"failed: {node.bug_reason}"
    return f"{node.status.replace('_', ' ')}: {node.feedback.splitlines()[0] if node.feedback else ''}"


def _memory(ctx: OpContext, size: int) -> str:
    """The last `size` attempts: what was tried and how it went (plans only, to keep prompts bounded)."""
    lines = []
    for node in ctx.store.last(size):
        plan = " ".join(node.plan.split())[:300] or "(no plan)"
        lines.append(f"- step {node.step} [{node.operator}]: {plan} -> {_result_line(ctx, node)}")
    return "\n".join(lines) or "(none yet)"


def _files_block(files: dict[str, str]) -> str:
    return "\n\n".join(f"### FILE: {rel}\n```\n{text}\n```" for rel, text in sorted(files.items()))


def _harness_files(ctx: OpContext) -> str:
    """The read-only harness files, shown so the agent knows the contract its code must keep."""
    code_dir = ctx.task.code_dir
    shown = {}
    for path in sorted(code_dir.rglob("*")):
        rel = path.relative_to(code_dir).as_posix()
        if path.is_file() and not ctx.task.is_editable(rel) and path.suffix in (".py", ".md", ".json", ".yaml", ".txt"):
            shown[rel] = path.read_text(errors="replace")
    return _files_block(shown) if shown else "(none)"


def _ask(ctx: OpContext, action: Action, parent: Node, instructions: str, cfg: Any) -> Proposal:
    files = ctx.store.files(parent)
    stdout = ctx.store.blobs.text(parent.stdout)
    stderr = ctx.store.blobs.text(parent.stderr)
    prompt = f"""# Task
{ctx.task.description_text()}

# Read-only harness files (you cannot change these)
{_harness_files(ctx)}

# Current solution (step {parent.step}): {_result_line(ctx, parent)}
{_files_block(files)}

## Its output
stdout:
{_tail(stdout, cfg.output_tail_chars) or '(empty)'}
stderr:
{_tail(stderr, cfg.output_tail_chars) or '(empty)'}

# Recent attempts
{_memory(ctx, cfg.memory_size)}

# Your job
{instructions}
Experiments left in the budget: {ctx.steps_left}. You may edit only: {', '.join(ctx.task.editable)}.

Start with a short plan (a few sentences) under the heading "Plan:", then give your edits.
{format_instructions(cfg.edit_format)}"""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
    call = ctx.llm.complete(messages)
    if call.error:
        return Proposal(files={}, edit_ok=False, feedback=f"LLM call failed: {call.error}", llm_calls=[call])
    result = apply_edits(call.response, files, ctx.task.is_editable, cfg.edit_format)
    new_files = {**files, **result.files}
    return Proposal(files=new_files, plan=_plan(call.response), edit_ok=result.ok, changed=result.changed,
                    feedback=result.feedback, llm_calls=[call])


def _plan(response: str) -> str:
    """The prose before the first edit: the agent's stated idea, kept for memory and the journal."""
    match = re.search(r"plan\s*:\s*(.*?)(?:\n\s*\n|```|<<<<<<<|### FILE)", response, re.IGNORECASE | re.DOTALL)
    text = match.group(1) if match else response.split("```")[0].split("<<<<<<<")[0]
    return " ".join(text.split())[:1000]


def improve(ctx: OpContext, parents: list[Node], action: Action, cfg: Any) -> Proposal:
    return _ask(ctx, action, parents[0], (
        "Propose ONE concrete change that you expect to improve the validation metric, different from the "
        "recent attempts above, and implement it."), cfg)


def debug(ctx: OpContext, parents: list[Node], action: Action, cfg: Any) -> Proposal:
    parent = parents[0]
    return _ask(ctx, action, parent, (
        f"The current solution failed ({parent.bug_reason}). Find the cause in its output and fix the bug. "
        "Keep the idea of the solution; only correct what is broken."), cfg)
