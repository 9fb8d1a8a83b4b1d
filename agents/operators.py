"""LLM operators shared by the built-in agents: draft, improve, debug, crossover, and analyze.

Each edit operator builds one prompt (sections from agents.prompts, kept under the config's
character budget), asks the LLM once with its own per-operator settings, and applies the reply as
edits to its first parent's files. A failed, empty or cut-off reply comes back as a Proposal with
feedback; the engine records it without spending an experiment, and the next prompt shows why.
`analyze` is AIDE's review step: one call per executed node, a short reading stored on the node.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable

from agents import prompts
from agents.prompts import PromptConfig
from agents.text import Section, is_library_frame, assemble, diff_stats, head_lines, summarize
from benchmark.agent_api import Action, Analysis, Analyzer, OpContext, Operator, Proposal
from benchmark.edits import apply_edits
from benchmark.journal import Node

EDIT_ROLES = ("draft", "improve", "debug", "crossover")


def build_messages(ctx: OpContext, role: str, parents: list[Node], cfg: PromptConfig,
                   explored: bool = False) -> list[dict[str, str]]:
    """The messages an edit operator sends: system role, then the sections in reading order."""
    parent = parents[0]
    first_prompt = not any(n.llm_calls for n in ctx.store)
    points_into_harness = role == "debug" and _traceback_names_harness(ctx, parent)
    sections: list[Section] = [prompts.task_section(ctx), prompts.setup_section(ctx),
                               prompts.harness_section(ctx, full=first_prompt or points_into_harness),
                               prompts.data_section(ctx, cfg, priority=55 if role in ("draft", "debug") else 40)]
    if explored:
        sections.append(prompts.explored_section(ctx))
    sections.append(prompts.attempts_section(ctx, cfg))
    if role == "debug":
        sections.append(prompts.debug_history_section(ctx, parent))
    if role == "crossover":
        sections.append(prompts.solution_section(ctx, parents[0], cfg, "Solution A (your edits apply here)"))
        sections.append(prompts.solution_section(ctx, parents[1], cfg, "Solution B"))
    else:
        label = "The task's baseline (edit this)" if role == "draft" else "Current solution (edit this)"
        sections.append(prompts.solution_section(ctx, parent, cfg, label))
    sections.append(prompts.job_section(ctx, role, cfg, parent))
    return [{"role": "system", "content": prompts.SYSTEM},
            {"role": "user", "content": assemble(sections, cfg.prompt_chars)}]


def _traceback_names_harness(ctx: OpContext, node: Node) -> bool:
    """The error was raised in a harness file (its innermost own-code frame is one), so the LLM needs
    that file in full to fix the call it makes; an error inside the agent's code does not."""
    frames = re.findall(r'File "([^"]+)", line \d+', ctx.store.blobs.text(node.stderr))
    own = [f for f in frames if not is_library_frame(f'File "{f}"')]
    return bool(own) and any(own[-1].endswith("/" + rel) or own[-1] == rel for rel in prompts.harness_files(ctx))


def edit(ctx: OpContext, parents: list[Node], action: Action, role: str, cfg: PromptConfig,
         explored: bool = False) -> Proposal:
    """Ask for an edit in ``role`` and apply the reply to the first parent's files."""
    return propose(ctx, ctx.store.files(parents[0]), build_messages(ctx, role, parents, cfg, explored), role, cfg)


def propose(ctx: OpContext, files: dict[str, str], messages: list[dict[str, str]], operator: str,
            cfg: PromptConfig) -> Proposal:
    """One LLM call with ``messages``; its reply applied as edits to ``files`` (for agents with prompts of their own)."""
    call = ctx.llm.complete(messages, operator=operator)
    if call.error:
        return Proposal(files={}, edit_ok=False, feedback=f"LLM call failed: {call.error}", llm_calls=[call])
    if call.truncated:
        return Proposal(files={}, plan=plan_of(call.response), edit_ok=False, llm_calls=[call], feedback=(
            f"Your reply was cut off at the token limit ({call.completion_tokens} tokens) before it ended, so "
            "none of it was applied. Send smaller edits: SEARCH/REPLACE blocks with only the lines that change."))
    result = apply_edits(call.response, files, ctx.task.is_editable, cfg.edit_format)
    return Proposal(files={**files, **result.files}, plan=plan_of(call.response), edit_ok=result.ok,
                    changed=result.changed, feedback=result.feedback, llm_calls=[call])


def plan_of(response: str) -> str:
    """The prose before the first edit: the agent's stated idea, kept for memory and the journal."""
    match = re.search(r"plan\s*:\s*(.*?)(?:\n\s*\n|```|<<<<<<<|### FILE)", response, re.IGNORECASE | re.DOTALL)
    text = match.group(1) if match else response.split("```")[0].split("<<<<<<<")[0]
    return summarize(text, 1500)


def analyze(ctx: OpContext, node: Node, cfg: PromptConfig) -> Analysis:
    """AIDE's review: a few sentences on what an executed node's result means, for later prompts."""
    metric = ctx.task.metric
    parent = ctx.store.get(node.parents[0]) if node.parents and node.parents[0] in ctx.store else None
    best = ctx.store.best()
    facts = [f"node {node.id} ({node.operator}): {prompts.result_line(ctx, node)}; metrics: {prompts.metrics_line(node)}",
             f"{metric.name}: {metric.direction} is better; the experiment took {node.seconds:.1f} s of "
             f"{(ctx.budget or ctx.task.budget).step_timeout_s:g} s allowed"]
    if parent is not None:
        facts.append(f"its parent, node {parent.id}: {prompts.result_line(ctx, parent)}")
    if best is not None:
        facts.append(f"best so far: node {best.id}, {metric.name} = {best.primary:.5g}")
    diff = ctx.store.blobs.text(node.diff) if node.diff else ""
    sections = [
        Section("Task (summary)", [head_lines(ctx.task.description_text(), 3000), ""], 40),
        Section("Plan of the experiment", [summarize(node.plan, 1500) or "(none)"], 90),
        Section(f"Change ({diff_stats(diff)})", [head_lines(diff, 6000), head_lines(diff, 1500)], 60),
        Section("Result", ["\n".join(f"- {f}" for f in facts)], 100),
        Section("Output", [prompts.output_tail(ctx, node, cfg.output_tail_chars),
                           prompts.output_tail(ctx, node, cfg.output_tail_chars // 3)], 80),
        Section("Your job", [prompts.ANALYZE_JOB], 100),
    ]
    messages = [{"role": "system", "content": prompts.ANALYZE_SYSTEM},
                {"role": "user", "content": assemble(sections, cfg.prompt_chars // 2)}]
    call = ctx.llm.complete(messages, operator="analyze")
    text = "" if call.error else summarize(call.response, 1200)
    return Analysis(text=text, llm_calls=[call])


def bind(cfg: Any, roles: tuple[str, ...] = EDIT_ROLES, explored: bool = False) -> dict[str, Operator]:
    """The edit operators for ``roles`` with ``cfg`` bound, keyed by role (the Action.operator names)."""
    return {role: functools.partial(edit, role=role, cfg=cfg, explored=explored) for role in roles}


def analyzer(cfg: Any) -> Analyzer:
    bound: Callable[[OpContext, Node], Analysis] = functools.partial(analyze, cfg=cfg)
    return bound
