"""LLM operators shared by the built-in agents: draft, improve, debug, crossover, and analyze.

Each edit operator builds one prompt (sections from agents.kit.prompts, kept under the config's
character budget), asks the LLM once with its own per-operator settings, and applies the reply as
edits to its first parent's files. A failed, empty or cut-off reply comes back as a Proposal with
feedback; the engine records it without spending an experiment, and the next prompt shows why.
`analyze` is AIDE's review step: one call per executed node, a short reading stored on the node.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from typing import Any, Callable, Sequence

from researchbench.agents.kit import prompts
from researchbench.agents.kit.prompts import PromptConfig
from researchbench.agents.kit.text import Section, assemble, diff_stats, head_lines, middle, summarize
from researchbench.agents.kit.tree import path_to_root
from researchbench.benchmark.common.moved import deprecated_names
from researchbench import BASELINE_ID, OK, Action, Analysis, Analyzer, Node, OpContext, Operator, Proposal, apply_edits

EDIT_ROLES = ("draft", "improve", "debug", "crossover")


def build_messages(ctx: OpContext, role: str, parents: list[Node], cfg: PromptConfig,
                   explored: bool = False, extra: Sequence[Section] = (), job: str | None = None) -> list[dict[str, str]]:
    """The messages an edit operator sends: system role, then the sections in reading order.

    ``extra`` sections (an agent's own memory: an experiment log, an idea and its notes) go before the
    solution; ``job`` replaces the role's standard instructions."""
    parent = parents[0]
    sections: list[Section] = [prompts.task_section(ctx), prompts.setup_section(ctx), prompts.harness_section(ctx),
                               prompts.data_section(ctx, cfg, priority=55 if role in ("draft", "debug") else 40)]
    if explored:
        sections.append(prompts.explored_section(ctx, cfg))
    sections.append(prompts.attempts_section(ctx, cfg, shown=frozenset(p.id for p in parents)))
    if role == "debug":
        sections.append(prompts.debug_history_section(ctx, parent))
    sections.extend(extra)
    if role == "crossover":
        a, b = parents[0], parents[1]
        sections.append(prompts.solution_section(ctx, a, cfg, f"Solution A (your edits apply here; {_lineage(ctx, a)})"))
        sections.append(prompts.solution_section(ctx, b, cfg, f"Solution B ({_lineage(ctx, b)})"))
    else:
        label = "The task's baseline (edit this)" if parent.id == BASELINE_ID else "Current solution (edit this)"
        sections.append(prompts.solution_section(ctx, parent, cfg, label))
    sections.append(prompts.job_section(ctx, role, cfg, parent, job))
    return [{"role": "system", "content": prompts.SYSTEM},
            {"role": "user", "content": assemble(sections, cfg.prompt_chars)}]


def _lineage(ctx: OpContext, node: Node) -> str:
    """How a crossover parent was reached, so the LLM sees what the two share: its first-parent chain."""
    return "lineage: " + " -> ".join(f"{n.id} ({n.operator})" for n in path_to_root(node, ctx.store))


def edit(ctx: OpContext, parents: list[Node], action: Action, role: str, cfg: PromptConfig,
         explored: bool = False, extra: Sequence[Section] = (), job: str | None = None,
         reply_edits: Callable[[str], str] = lambda reply: reply) -> Proposal:
    """Ask for an edit in ``role`` and apply the reply to the first parent's files (``reply_edits``
    picks the part of the reply that holds the edits, for agents whose replies carry more)."""
    messages = build_messages(ctx, role, parents, cfg, explored, extra, job)
    return propose(ctx, ctx.store.files(parents[0]), messages, role, cfg, reply_edits)


def propose(ctx: OpContext, files: dict[str, str], messages: list[dict[str, str]], operator: str,
            cfg: PromptConfig, reply_edits: Callable[[str], str] = lambda reply: reply) -> Proposal:
    """One LLM call with ``messages``; its reply applied as edits to ``files`` (for agents with prompts of their own)."""
    call = ctx.llm.complete(messages, operator=operator)
    if call.error:
        return Proposal(files={}, edit_ok=False, feedback=f"LLM call failed: {call.error}", llm_calls=[call])
    reply = reply_edits(call.response)
    if call.truncated:
        return Proposal(files={}, plan=plan_of(reply), edit_ok=False, llm_calls=[call], feedback=(
            f"Your reply was cut off at the token limit ({call.completion_tokens} tokens) before it ended, so "
            "none of it was applied. Send smaller edits: SEARCH/REPLACE blocks with only the lines that change."))
    result = apply_edits(reply, files, ctx.task.is_editable, cfg.edit_format)
    return Proposal(files={**files, **result.files}, plan=plan_of(reply), edit_ok=result.ok,
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
    best = ctx.store.best()  # the node under review is not in the store yet: it may be the new best
    if node.status == OK and node.primary is not None and (best is None or metric.outranks(node, best)):
        best = node
    facts = [f"node {node.id} ({node.operator}): {prompts.result_line(ctx, node)}; metrics: {prompts.metrics_line(node)}",
             f"{metric.name}: {metric.direction} is better"]
    if parent is not None:
        facts.append(f"its parent, node {parent.id}: {prompts.result_line(ctx, parent)}")
    if best is not None:
        facts.append(f"best so far: node {best.id}, {metric.name} = {best.primary:.5g}"
                     + (" (this node)" if best is node else ""))
    diff = ctx.store.blobs.text(node.diff) if node.diff else ""
    sections = [
        Section("Task", [prompts.task_text(ctx)], 100),  # never cut: the review weighs the result against it
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
    text = "" if call.error else middle(call.response, 2000)  # its conclusion (the next step) is last
    return Analysis(text=text, llm_calls=[call])


def bind(cfg: Any, roles: tuple[str, ...] = EDIT_ROLES, explored: bool = False) -> dict[str, Operator]:
    """The edit operators for ``roles`` with ``cfg`` bound, keyed by role (the Action.operator names)."""
    return {role: functools.partial(edit, role=role, cfg=cfg, explored=explored) for role in roles}


def analyzer(cfg: Any) -> Analyzer:
    bound: Callable[[OpContext, Node], Analysis] = functools.partial(analyze, cfg=cfg)
    return bound


def _prompt_config(cfg: Any) -> PromptConfig:
    """The old operators took any config with edit_format/memory_size/output_tail_chars; the newer settings
    a config lacks take their defaults."""
    if isinstance(cfg, PromptConfig):
        return cfg
    return PromptConfig(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(PromptConfig) if hasattr(cfg, f.name)})


def _legacy_operator(role: str) -> Operator:
    def operator(ctx: OpContext, parents: list[Node], action: Action, cfg: Any) -> Proposal:
        return edit(ctx, parents, action, role, _prompt_config(cfg))

    operator.__name__ = operator.__qualname__ = role
    operator.__doc__ = f"Deprecated: edit(ctx, parents, action, {role!r}, cfg), or bind(cfg)[{role!r}]."
    return operator


# Public names an earlier release had here (third-party agents import them): one release of warnings.
__getattr__ = deprecated_names(__name__, {
    "improve": (_legacy_operator("improve"), "use agents.kit.operators.bind(cfg)['improve'] "
                                             "or edit(ctx, parents, action, 'improve', cfg)"),
    "debug": (_legacy_operator("debug"), "use agents.kit.operators.bind(cfg)['debug'] "
                                         "or edit(ctx, parents, action, 'debug', cfg)"),
    "SYSTEM": (prompts.SYSTEM, "use agents.kit.prompts.SYSTEM"),
})


# -- ideas (AI Scientist v1/v2) ------------------------------------------------------------------

RATINGS = ("Interestingness", "Feasibility", "Novelty")


def parse_idea(reply: str) -> dict[str, Any] | None:
    """The last JSON object in a reply that names an idea (Name, Title, Experiment), ratings as ints."""
    decoder = json.JSONDecoder()
    found = None
    for start in [m.start() for m in re.finditer(r"\{", reply)]:
        try:
            value, _ = decoder.raw_decode(reply[start:])
        except ValueError:
            continue
        if isinstance(value, dict) and all(isinstance(value.get(k), str) and value[k].strip()
                                           for k in ("Name", "Title", "Experiment")):
            found = value
    if found is None:
        return None
    idea = {k: str(found[k]).strip() for k in ("Name", "Title", "Experiment")}
    for key in RATINGS:
        try:
            idea[key] = max(0, min(10, int(float(found.get(key, 0)))))
        except (TypeError, ValueError):
            idea[key] = 0
    return idea


def ideation_messages(ctx: OpContext, cfg: PromptConfig, parent: Node, known: list[dict]) -> list[dict[str, str]]:
    sections = [prompts.task_section(ctx), prompts.setup_section(ctx),
                prompts.data_section(ctx, cfg, priority=40),
                prompts.solution_section(ctx, parent, cfg, "The code the ideas start from"),
                prompts.ideas_section(known),
                Section("Your job", [prompts.IDEA_JOB.format(metric=ctx.task.metric.name)], 100)]
    return [{"role": "system", "content": prompts.IDEA_SYSTEM},
            {"role": "user", "content": assemble(sections, cfg.prompt_chars)}]


def ideate(ctx: OpContext, cfg: PromptConfig, parent: Node, count: int, reflections: int, novelty_check: bool,
           known: Sequence[dict] = ()) -> tuple[list[dict[str, Any]], list[Any]]:
    """AI Scientist's idea generation: ``count`` ideas, one at a time, each seeing the ideas before it and
    refined over up to ``reflections`` rounds of one conversation (stopping at 'I am done'); then, with
    ``novelty_check``, one judgement per idea (offline: against the baseline and the other ideas, since
    no literature search is reachable from a sandboxed run). LLM calls only: no experiment."""
    ideas: list[dict[str, Any]] = []
    calls: list[Any] = []
    for _ in range(count):
        messages = ideation_messages(ctx, cfg, parent, [*known, *ideas])
        idea, call = None, None
        for round_ in range(1, max(reflections, 1) + 1):
            if call is not None:  # a reflection round: the idea just proposed, then the request to revisit it
                messages = messages + [{"role": "assistant", "content": call.response},
                                       {"role": "user", "content": prompts.REFLECT_JOB.format(round=round_, total=reflections)}]
            call = ctx.llm.complete(messages, operator="ideation")
            calls.append(call)
            if call.error:
                break
            idea = parse_idea(call.response) or idea
            if round_ > 1 and "i am done" in call.response.lower():
                break
        if call.error and idea is None:
            break  # the endpoint fails: stop rather than burn calls
        if idea is not None and idea["Name"] not in {i["Name"] for i in [*known, *ideas]}:
            ideas.append(idea)
    for idea in ideas if novelty_check else ():
        others = [i for i in [*known, *ideas] if i is not idea]
        sections = [prompts.task_section(ctx), prompts.solution_section(ctx, parent, cfg, "The baseline's code"),
                    prompts.ideas_section(others, "Other ideas"), Section("Idea to judge", [prompts.idea_text(idea, prompts.IDEA_CHARS)], 100),
                    Section("Your job", [prompts.NOVELTY_JOB], 100)]
        call = ctx.llm.complete([{"role": "system", "content": prompts.IDEA_SYSTEM},
                                 {"role": "user", "content": assemble(sections, cfg.prompt_chars // 2)}], operator="novelty")
        calls.append(call)
        decision = re.findall(r"decision\s*:\s*(not\s+novel|novel)", call.response or "", re.IGNORECASE)
        # a failed call leaves the idea unjudged, and an unjudged idea is kept: the filter drops only what it read
        idea["novel"] = bool(call.error) or (bool(decision) and decision[-1].lower() == "novel")
    return ideas, calls
