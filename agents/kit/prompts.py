"""Prompt sections and wording for the shared operators (our own text; no other project's prompts).

What a strong LLM asked for, and where it lives: numbers instead of words for limits (`setup`), the
latest attempts (and the best) with what each changed, every metric and the start and end of their
output (`attempts`), what was already tried from the solution being edited (`solution_section`),
tracebacks kept whole where they fit (`text.tail_lines`), a data preview (`researchbench.benchmark.tasks.data_preview`),
harness files in full where the prompt has room, else outlined (`harness`), and a character budget that shrinks
the least important sections first (`text.assemble`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from researchbench.agents.kit.runtime_api import runtime_api
from researchbench.agents.kit.text import (Section, diff_stats, fold_repeats, head_and_tail, head_lines, middle,
                                           outline_python, summarize, tail_lines)
from researchbench import OK, Node, domain
from researchbench.benchmark.edits import FORMATS
from researchbench.benchmark.tasks.data_preview import preview
from researchbench.benchmark.tasks.noise import noise_fact

if TYPE_CHECKING:
    from researchbench.benchmark.contract.agent_api import OpContext
    from researchbench.benchmark.tasks.manifest import Metric

SYSTEM = (
    "You are an experienced machine-learning researcher improving a research codebase through experiments. "
    "Each proposal you make is run once, as one experiment, in a sandbox without network access, and scored "
    "by the harness on a validation set whose labels you never see. Be concrete, change only what your idea "
    "needs, keep the code deterministic, and keep it well inside the time limit."
)

ANALYZE_SYSTEM = (
    "You review the result of one machine-learning experiment for a colleague who will plan the next one. "
    "Be factual and brief; quote numbers."
)

JOBS = {
    "draft": (
        "Propose a new approach to this task and implement it as an edit of the baseline shown above. It must "
        "be a real alternative: a different method from the baseline's and from every other draft listed above "
        "(a part that any method needs, such as how predictions are turned into the required output, may be "
        "reused). Keep this first version simple and robust, so it runs well inside the time limit."
    ),
    "improve": (
        "Propose ONE concrete change to the solution above that you expect to improve {metric}, and implement "
        "it: one idea, with whatever settings must move with it to make it work (coupled settings count as one "
        "change). Do not repeat an idea that was already tried from this solution (listed above); an idea that "
        "helped on another attempt is worth bringing into this one. Build on what the results suggest."
    ),
    "debug": (
        "The solution above failed ({reason}). Find the cause in its output and fix it. Keep the solution's "
        "idea; correct only what is broken. Do not repeat a fix that already failed (see the debug history)."
    ),
    "crossover": (
        "Solutions A and B above both work. Combine their strengths into one solution that you expect to "
        "beat both on {metric}. Your edits apply to A's files: bring over what is worth taking from B."
    ),
}

RESPONSE = (
    "Reply with a line starting 'Plan:' and 3-5 sentences: the idea, why you expect it to help, and what "
    "you change. Then give the edits, and nothing after them."
)

ANALYZE_JOB = (
    "In 2-4 sentences: what does this result say about the idea (did it work, by how much compared with its "
    "parent and the best so far, and why, if the output shows it)? If it failed, name the cause. End with "
    "the most promising next step. Plain text, no code."
)

IDEA_SYSTEM = (
    "You are an ambitious machine-learning researcher. You propose research ideas for a codebase; each idea "
    "will be implemented and tested as a short series of experiments by a colleague, within fixed limits."
)

IDEA_JOB = (
    "Propose the next research idea for this task: one change of method that you expect to improve {metric}, "
    "testable as a short series of experiments on the code above and within the limits above. It must differ "
    "from every idea listed under 'Ideas so far'. Rate it honestly from 1 to 10: Interestingness, Feasibility "
    "(can it be implemented and run within the limits?) and Novelty (compared with the baseline's method and "
    "the ideas so far).\n\n"
    "Reply with a line starting 'Thought:' and a few sentences of reasoning, then one JSON object in a ```json "
    "block with the keys \"Name\" (short, lowercase, underscores), \"Title\", \"Experiment\" (what to "
    "implement and what to measure, concretely), \"Interestingness\", \"Feasibility\", \"Novelty\"."
)

REFLECT_JOB = (
    "Round {round}/{total}. Reconsider the idea you just proposed: is it sound, feasible within the limits, "
    "clearly different from the ideas so far, and specific enough to implement? Improve what is weak and "
    "reply in the same format (a 'Thought:' line, then the JSON). If nothing needs to change, repeat the same "
    "JSON and write 'I am done' after it."
)

NOVELTY_JOB = (
    "Is the idea to judge (above) new compared with the baseline's method and with the other ideas listed? No literature "
    "search is available: judge from the task, the code and the list. The baseline's method again, a minor "
    "variant of a listed idea, or a renaming is not novel. Reply with one or two sentences of reasoning and end "
    "with exactly 'Decision: novel' or 'Decision: not novel'."
)

TEXT_SUFFIXES = (".py", ".md", ".json", ".yaml", ".yml", ".txt", ".toml", ".cfg", ".sh")


@dataclass
class PromptConfig:
    """Prompt settings shared by every LLM agent (its config class inherits them)."""

    edit_format: str = domain("auto", one_of=FORMATS)  # auto: either format, SEARCH/REPLACE preferred
    memory_size: int = domain(6, ge=0)  # recent attempts shown in detail
    output_tail_chars: int = domain(3000, ge=0)  # per stream, of each solution being worked on
    attempt_tail_chars: int = domain(3200, ge=0)  # start and end of each recent attempt's output, both streams
    prompt_chars: int = domain(60000, ge=1)  # target prompt size; the least important sections shrink first
    data_preview: bool = True  # show shapes, dtypes and rows of the public data


# -- facts about nodes ---------------------------------------------------------------------------


def metrics_line(node: Node) -> str:
    return ", ".join(f"{k}={v:.5g}" for k, v in sorted(node.metrics.items())) or "none"


def result_line(ctx: OpContext, node: Node) -> str:
    """The outcome of a node in one phrase; an executed one with the time it took (`time_note`)."""
    metric = ctx.task.metric
    if node.status == OK:
        return f"{metric.name} = {node.primary:.5g} ({time_note(ctx, node)})"
    if node.executed:
        return f"FAILED ({node.bug_reason or 'error'}; {time_note(ctx, node)})"
    reason = node.feedback.strip().splitlines()[0] if node.feedback.strip() else ""
    return f"not run: {node.status.replace('_', ' ')}" + (f" ({summarize(reason, 200)})" if reason else "")


def _compare(ctx: OpContext, node: Node) -> str:
    """How a scored node compares with its parent and with the best, in words a planner can use."""
    if node.status != OK or not node.parents:
        return ""
    parent = ctx.store.get(node.parents[0])
    best = ctx.store.best()
    words = []
    if parent.status == OK:
        better = ctx.task.metric.better(node.primary, parent.primary)
        same = node.primary == parent.primary
        words.append("same as its parent" if same else ("better than its parent" if better else "worse than its parent"))
    if best is not None and best.id == node.id:
        words.append("the best so far" + _tie_break_note(ctx, node))
    return f" ({'; '.join(words)})" if words else ""


def _tie_break_note(ctx: OpContext, best: Node) -> str:
    """Why the best node leads another node with the same score: an equal score read as a step forward
    otherwise (an answerer took a tie won on the task's tie-break for an improvement)."""
    metric = ctx.task.metric
    for rival in ctx.store:
        if rival.id != best.id and rival.status == OK and rival.primary == best.primary:
            decided = metric.deciding_tie_break(best, rival)
            if decided is not None:
                name, direction = decided
                return (f", tied with node {rival.id} on {metric.name} and ahead by its {direction} {name} "
                        f"({best.metrics[name]:.5g} vs {rival.metrics[name]:.5g}), the task's tie-break")
    return ""


HALF_LIMIT_WARNING = "over half the limit: a heavier version of it would be killed"


def _on_cpu_clock(node: Node) -> bool:
    return node.clock == "cpu" and node.cpu_seconds is not None


def time_note(ctx: OpContext, node: Node) -> str:
    """An experiment's time against the run's step limit, on the clock the limit used (CPU time, with
    wall-clock beside it, or wall-clock), with a warning past half the limit: a planner that sees
    only scores keeps adding work until a run times out."""
    limit = ctx.budget.step_timeout_s
    if _on_cpu_clock(node):
        used = float(node.cpu_seconds or 0.0)
        text = f"{used:.1f} s CPU / {node.seconds:.1f} s wall, {used / limit:.0%} of the {limit:g} s CPU limit"
    else:
        used = node.seconds
        text = f"{used:.1f} s, {used / limit:.0%} of the {limit:g} s limit"
    if node.timed_out:
        return text + ": killed at the limit"
    return text + (f": {HALF_LIMIT_WARNING}" if used > limit / 2 else "")


def output_tail(ctx: OpContext, node: Node, limit: int) -> str:
    """Both streams, each cut from the middle when long: the start shows what ran, the end how it ended."""
    stdout = head_and_tail(fold_repeats(ctx.store.blobs.text(node.stdout)), limit)
    stderr = head_and_tail(fold_repeats(ctx.store.blobs.text(node.stderr)), limit)
    return f"stdout:\n{stdout or '(empty)'}\nstderr:\n{stderr or '(empty)'}"


# -- sections ------------------------------------------------------------------------------------


def task_text(ctx: OpContext) -> str:
    """The task's description with this run's budget in its placeholders (`{{budget.steps}}` experiments,
    ...): a run with `budget.steps=8` must not read the manifest's 10 anywhere."""
    return ctx.task.description_text(ctx.budget)


def task_section(ctx: OpContext) -> Section:
    text = task_text(ctx)
    return Section("Task", [text, head_lines(text, 4000)], 100)


def _cpu_clock(ctx: OpContext) -> bool:
    """Whether the executor limits CPU time (as the baseline ran); wall-clock otherwise."""
    baseline = ctx.store.baseline()
    return baseline is not None and baseline.clock == "cpu"


def limit_text(ctx: OpContext, seconds: float) -> str:
    """A run's time limit on the clock that enforces it (the step limit's: CPU time where the baseline ran
    on it)."""
    return (f"{seconds:g} s of CPU time, all its processes and threads summed" if _cpu_clock(ctx)
            else f"{seconds:g} s (wall-clock)")


def budget_line(ctx: OpContext, commands: bool = False) -> str:
    """The run's budget in one line, in the units it is enforced in (experiments; seconds on the step
    limit's clock). Every operator of every agent states the budget through this line alone; `commands`:
    the agent runs shell commands too (they spend compute)."""
    budget, cpu = ctx.budget, _cpu_clock(ctx)
    compute = f"{budget.compute_hours * 3600:g} s of {'CPU' if cpu else 'experiment'} time in all"
    if math.isfinite(ctx.compute_left_s):
        compute = f"{max(ctx.compute_left_s, 0.0):.0f} s left of {compute}"
    spent_by = "experiments and the commands you run" if commands else "experiments"
    return (f"Budget: {ctx.steps_left} of {budget.steps} experiments left (every run spends one, failed or not; "
            f"an edit that cannot be applied or changes nothing spends none); compute: {compute} ({spent_by}).")


def versions_line(ctx: OpContext) -> str:
    """Python and the task's libraries as installed for the experiments ("" when the run has none)."""
    if not ctx.libraries:
        return ""
    python = ctx.libraries.get("python")
    libraries = {name: version for name, version in ctx.libraries.items() if name != "python"}
    names = ", ".join(f"{name} {version}" for name, version in libraries.items() if version != "not installed")
    absent = ", ".join(name for name, version in libraries.items() if version == "not installed")
    return ((f"Python {python}; " if python else "") + (f"installed: {names}. " if names else "")
            + (f"NOT installed (do not import): {absent}. " if absent else "")
            + "Write code for these versions: an argument or function that a library removed or renamed "
              "makes the experiment fail.")


def setup_section(ctx: OpContext, commands: bool = False) -> Section:
    """Numbers the LLM plans with: metric and scores, the val and test sizes and the baseline's noise on
    them (so a val difference can be judged), the run's budget, the step limit, the baseline's measured
    time on the limit's clock, and the library versions. The task's own description states
    its rules; this section is the one place for this run's limits."""
    task, budget = ctx.task, ctx.budget
    res, metric = task.resources, task.metric
    baseline = ctx.store.baseline()
    best = ctx.store.best()
    scores = []
    if baseline is not None:
        scores.append(f"baseline (node 0000): {metric.name} = {baseline.primary:.5g}")
    if best is not None:
        scores.append(f"best so far: {metric.name} = {best.primary:.5g} (node {best.id})")
    limit = limit_text(ctx, budget.step_timeout_s)
    if _cpu_clock(ctx) and baseline is not None and baseline.wall_limit_s:  # the baseline ran under the same step limit
        limit += f", or at {baseline.wall_limit_s:g} s of wall-clock time (a backstop for a run that waits)"
    lines = [
        f"- Metric: {metric.name} on the validation set, {metric.direction} is better. " + "; ".join(scores) + ".",
        f"- {budget_line(ctx, commands)}",
        f"- One experiment = one run of your code, killed at {limit}; {res.cpus} CPU{'s' if res.cpus != 1 else ''}, "
        f"{res.memory_gb:g} GB memory, {res.gpus or 'no'} GPU{'s' if res.gpus != 1 else ''}, no network.",
    ]
    noise = noise_fact(task.noise, metric.name)
    if noise:
        lines.insert(1, f"- {noise}")
    if best is not None and metric.best_possible is not None and best.primary == metric.best_possible:
        lines.insert(1, f"- The best so far has reached {metric.name}'s best possible value ({metric.best_possible:g}) "
                        "on the validation set: val cannot rank further changes, so prefer ones you expect to "
                        f"hold on unseen data (simpler, less tuned to val); {tie_rule(metric)}.")
    if baseline is not None and baseline.executed:
        lines.append(f"- The baseline's run took {time_note(ctx, baseline)}, measured in this run (plan with this "
                     "figure, not with any time the task text states). Keep each experiment well under half the "
                     "limit: the machine may be slower when it runs.")
    versions = versions_line(ctx)
    if versions:
        lines.append(f"- Environment: {versions}")
    lines.append(f"- You may edit only files matching: {', '.join(task.editable)}. Every other file belongs to the "
                 "harness and is restored before each run.")
    return Section("Setup and limits (this run's)", ["\n".join(lines)], 99)


def tie_rule(metric: Metric) -> str:
    """How the harness picks among nodes equal on the primary metric (the task's tie-breaks, then age)."""
    shown = [f"the {direction} {name}" for name, direction in metric.tie_breaks]
    return "ties go to " + ", then ".join([*shown, "the earliest node"])


def harness_files(ctx: OpContext) -> dict[str, str]:
    out = {}
    for code_dir in (ctx.task.code_dir, ctx.task.code_overlay):  # a variant's own files replace the base's
        for path in sorted(code_dir.rglob("*")) if code_dir else ():
            rel = path.relative_to(code_dir).as_posix()
            if path.is_file() and not ctx.task.is_editable(rel) and path.suffix in TEXT_SUFFIXES \
                    and "__pycache__" not in rel:
                out[rel] = path.read_text(errors="replace")
    return dict(sorted(out.items()))


def harness_section(ctx: OpContext) -> Section:
    """Read-only harness files, whole in every prompt that has room for them (every call is stateless:
    an outline after the first prompt dropped details the model needed, such as a weight layout), else
    as an outline of the contract. The task runtime's names that they import follow, one line each, in
    both forms."""
    files = harness_files(ctx)
    if not files:
        return Section("Harness files (read-only)", [""], 60)
    outline = "\n\n".join(
        f"{rel} (outline: its signatures and docstrings; the file is the task's, unchanged by any attempt):\n```\n"
        + (outline_python(text) if rel.endswith(".py") else "\n".join(text.splitlines()[:10])) + "\n```"
        for rel, text in files.items())
    api = runtime_api(text for rel, text in files.items() if rel.endswith(".py"))
    variants = [files_block(files), outline]
    variants = [f"{text}\n\n{api}" if api else text for text in variants]
    return Section("Harness files (read-only)", variants, 60)


def data_section(ctx: OpContext, cfg: PromptConfig, priority: int) -> Section:
    text = preview(ctx.public_dir) if cfg.data_preview else ""
    return Section("Data preview (public data, read-only)", [text, ""] if text else [""], priority)


def attempts_section(ctx: OpContext, cfg: PromptConfig, shown: frozenset[str] = frozenset()) -> Section:
    """The latest attempts and the best: parent, what changed, every metric, and the start and end of
    each run's output (except for the ``shown`` nodes, whose whole output the prompt carries with their files)."""
    nodes = [n for n in ctx.store.last(cfg.memory_size) if n.step > 0]
    best = ctx.store.best()
    if nodes and best is not None and best.step > 0 and best.id not in {n.id for n in nodes}:
        nodes.insert(0, best)  # the best stays in view however many attempts followed it
    if not nodes:
        return Section("Recent attempts", ["(none yet)"], 70)

    def entry(node: Node, detail: bool) -> str:
        parents = " + ".join(node.parents)
        diff = diff_stats(ctx.store.blobs.text(node.diff)) if node.diff else ""
        head = f"- node {node.id}, {node.operator} of {parents}: {result_line(ctx, node)}{_compare(ctx, node)}"
        head += f"; {diff}." if diff else "."
        if not detail:
            return head
        lines = [head] + ([f"  plan: {summarize(node.plan, 1600)}"] if node.plan else [])
        if node.executed:
            lines.append(f"  metrics: {metrics_line(node)}")
        if node.analysis and node.id in shown:
            lines.append("  analysis: (with its files below)")
        elif node.analysis:
            lines.append(f"  analysis: {middle(node.analysis, 1200)}")
        if not node.executed and node.feedback:
            lines.append("  feedback:\n" + _indent(tail_lines(node.feedback, cfg.attempt_tail_chars)))
        elif node.executed and cfg.attempt_tail_chars and node.id not in shown:
            # both streams, cut in the middle: what a run printed first (its diagnostics) and how it ended
            lines.append("  output (start and end):\n" + _indent(output_tail(ctx, node, cfg.attempt_tail_chars // 2)))
        return "\n".join(lines)

    newest_first = nodes[::-1]
    full = "\n".join(entry(n, True) for n in newest_first)
    half = "\n".join(entry(n, i < max(1, len(nodes) // 2)) for i, n in enumerate(newest_first))
    brief = "\n".join(entry(n, False) for n in newest_first)
    return Section("Recent attempts (newest first)", [full, half, brief], 70)


def explored_section(ctx: OpContext, cfg: PromptConfig) -> Section:
    """AIDE's memory: every scored node's plan, its analysis and its metric, oldest first; the nodes the
    recent attempts show in detail are left out, so no plan or analysis is read twice."""
    recent = {n.id for n in ctx.store.last(cfg.memory_size)}
    valid = [n for n in ctx.store if n.status == OK and n.step > 0 and n.id not in recent]

    def entry(node: Node) -> str:
        text = f"- node {node.id} ({node.operator}): {ctx.task.metric.name} = {node.primary:.5g}\n" \
               f"  design: {summarize(node.plan, 800) or '(none)'}"
        return text + (f"\n  result: {middle(node.analysis, 800)}" if node.analysis else "")

    title = "Earlier ideas explored (scored; the latest are under Recent attempts)"
    if not valid:
        return Section(title, [""], 50)
    return Section(title, ["\n".join(entry(n) for n in valid), "\n".join(entry(n) for n in valid[-8:]), ""], 50)


def debug_history_section(ctx: OpContext, node: Node) -> Section:
    """The failing chain above the node being debugged (AIRA's ancestral memory), oldest first; always
    present, since the debug job refers to it."""
    chain = []
    current = node
    while current.parents and ctx.store.get(current.parents[0]).is_buggy:
        current = ctx.store.get(current.parents[0])
        chain.append(current)
    tried = [c for c in ctx.store.children(node.id) if not c.executed and c.operator == "debug"]

    def listing(chars: int) -> str:
        lines = [f"- node {n.id} ({n.operator}): {summarize(n.plan, chars)} -> failed: {_last_error(ctx, n)}"
                 for n in chain[::-1]]
        lines += [f"- a fix of node {node.id} that was never run: {summarize(c.feedback, chars)}" for c in tried]
        return "\n".join(lines) or (f"(none: this is the first attempt to fix node {node.id}; its failure "
                                     "and output are shown with the solution below)")

    return Section("Debug history (earlier failed attempts in this chain)", [listing(600), listing(150)], 80)


def _last_error(ctx: OpContext, node: Node) -> str:
    lines = [line for line in ctx.store.blobs.text(node.stderr).splitlines() if line.strip()]
    return summarize(lines[-1], 300) if lines else node.bug_reason


def solution_section(ctx: OpContext, node: Node, cfg: PromptConfig, label: str) -> Section:
    files = ctx.store.files(node)
    head = f"node {node.id} ({node.operator}): {result_line(ctx, node)}; metrics: {metrics_line(node)}"
    if node.analysis:
        head += f"\nAnalysis: {middle(node.analysis, 1200)}"
    head += _tried_from(ctx, node)

    def body(limit: int) -> str:
        return f"{head}\n\n{files_block(files)}\n\n## Its output\n{output_tail(ctx, node, limit)}"

    return Section(label, [body(cfg.output_tail_chars), body(cfg.output_tail_chars // 3)], 90)


def _tried_from(ctx: OpContext, node: Node) -> str:
    """What was already tried on top of this solution, and whether the latest attempt is this one: a
    policy that returns to its best node shows it again, and its analysis may suggest a step since lost."""
    tried = [c for c in ctx.store.children(node.id) if c.status]
    text = ""
    if tried:
        text += "\nAlready tried from this solution (do not repeat):\n" + "\n".join(
            f"- node {c.id} ({c.operator}): {result_line(ctx, c)}; plan: {summarize(c.plan, 200) or '(none)'}"
            for c in tried)
    latest = next((n for n in reversed(list(ctx.store)) if n.step > 0 and n.status), None)
    if latest is not None and latest.id != node.id:
        text += (f"\nThe latest attempt, node {latest.id}, is not this solution: its changes are not in the files "
                 "below.")
    return text


def job_section(ctx: OpContext, role: str, cfg: PromptConfig, parent: Node, job: str | None = None) -> Section:
    from researchbench.benchmark.edits import format_instructions

    job = job or JOBS[role].format(metric=ctx.task.metric.name, reason=parent.bug_reason or "error")
    shown = (f"\n\nWhat your run prints comes back to you cut to about {cfg.output_tail_chars} characters per stream "
             f"(the start and the end; {cfg.attempt_tail_chars // 2} once it is an earlier attempt): print compact "
             "diagnostics, the most important last.")
    text = f"{job}{shown}\n\n{RESPONSE}\n\n{format_instructions(cfg.edit_format)}{_token_note(ctx, role, parent)}"
    return Section("Your job", [text], 100)


def _token_note(ctx: OpContext, role: str, parent: Node) -> str:
    """Warn when whole files would not fit in the reply the LLM is allowed (about 3.5 chars a token)."""
    if ctx.llm is None:
        return ""
    limit = ctx.llm.cfg.for_operator(role).max_tokens
    need = int(sum(len(t) for t in ctx.store.files(parent).values()) / 3.5) + 500
    if need <= limit // 2:
        return ""
    return (f"\nYour reply is limited to {limit} tokens and the editable files take about {need}: "
            "send SEARCH/REPLACE blocks, not whole files, or the reply will be cut off.")


def files_block(files: dict[str, str]) -> str:
    return "\n\n".join(f"### FILE: {rel}\n````\n{text.rstrip()}\n````" for rel, text in sorted(files.items()))


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


# -- ideas (AI Scientist) ------------------------------------------------------------------------


IDEA_CHARS = 4000  # an idea being implemented or judged is read whole (an ideation reply is ~1-2 KB)


def idea_text(idea: dict, limit: int = 800) -> str:
    """An idea as the lines a prompt shows: title, experiment (cut at `limit` in a list of other ideas;
    pass IDEA_CHARS where the idea itself is the subject), the LLM's own ratings."""
    ratings = ", ".join(f"{k} {idea.get(k, '?')}" for k in ("Interestingness", "Feasibility", "Novelty"))
    return f"{idea.get('Title') or idea.get('Name')} ({ratings})\n  Experiment: {summarize(str(idea.get('Experiment', '')), limit)}"


def ideas_section(ideas: list[dict], title: str = "Ideas so far") -> Section:
    """Earlier ideas (with what came of them, when a policy recorded it), so a new one differs."""
    if not ideas:
        return Section(title, ["(none yet)"], 80)

    def entry(idea: dict, detail: bool) -> str:
        text = "- " + (idea_text(idea) if detail else str(idea.get("Title") or idea.get("Name")))
        return text + (f"\n  Outcome: {idea['outcome']}" if idea.get("outcome") else "")

    return Section(title, ["\n".join(entry(i, True) for i in ideas), "\n".join(entry(i, False) for i in ideas)], 80)


def experiment_log_section(ctx: OpContext, rows: list[tuple[Node, str]], title: str = "Experiment log") -> Section:
    """autoresearch's results table: every experiment, oldest first, with keep / discard / crash."""
    if not rows:
        return Section(title, ["(no experiments yet besides the baseline)"], 75)
    lines = [f"- node {n.id}: {result_line(ctx, n)} | {status} | {summarize(n.plan, 160) or '(no description)'}"
             for n, status in rows]
    return Section(title + " (oldest first; keep = new best, discard = reverted, crash = failed)",
                   ["\n".join(lines), "\n".join(lines[-15:])], 75)
