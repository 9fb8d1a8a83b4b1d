"""A ReAct agent with FARBench's action protocol (the FARBench paper's agent loop), and MLRB's supervisor-worker variant.

Each turn the LLM replies with one JSON action, any combination of fields, applied in FARBench's
order: `files_to_write` (full contents of editable files; SEARCH/REPLACE blocks after the JSON work
too), `command` (one bash command the harness runs in the val sandbox over the current files: public
data only, no labels, no test inputs, no network; its time is charged to the compute budget,
benchmark/run/commands.py), `submit_eval` (skipped if that command failed: the files become one
experiment, val phase plus evaluator), `done` (the conversation ends). An invalid reply is a
recorded failed turn, answered with the error.

One node = the turns up to one `submit_eval`, or `done`, or `max_turns_per_experiment` turns (a
no-op node; the conversation goes on). The conversation lives in the store (node.transcript) and the
policy is a pure function of it, so a SIGKILLed run resumes with the same conversation. The prompt is
bounded: the last `history_detail` turns verbatim, older ones a line each (`history_entries`).
`conversations` independent conversations run one node in flight each (a turn needs the previous
observation). `supervisor=true` is MLRB's variant: a `supervise` call writes each assignment from all
results so far; a fresh worker conversation on the best solution carries it out. See docs/agents.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable

from researchbench.agents.kit import prompts
from researchbench.agents.kit.prompts import PromptConfig
from researchbench.agents.kit.text import Section, assemble, head_lines, summarize, tail_lines
from researchbench.agents.kit.tree import ROOT
from researchbench import (Action, Agent, AgentSpec, Node, NodeStore, OpContext, Proposal, StatelessPolicy, TaskSpec,
                           apply_edits, domain, format_instructions, hookimpl)


@dataclass
class ReactConfig(PromptConfig):
    name: str = "react"
    # FARBench's prompt limits: history <= 20 entries, last 3 in detail, tails 2000/1000/300
    history_entries: int = domain(20, ge=1)
    history_detail: int = domain(3, ge=0)
    stdout_tail_chars: int = domain(2000, ge=0)
    stderr_tail_chars: int = domain(1000, ge=0)
    history_stdout_chars: int = domain(300, ge=0)
    # FARBench caps a command at the budget left; ours also at step_timeout_s
    command_timeout_s: float = domain(600.0, gt=0)
    # ours: a node (checkpoint) ends after this many turns without submit
    max_turns_per_experiment: int = domain(12, ge=1)
    conversations: int = domain(1, ge=1)  # independent conversations in flight
    supervisor: bool = False  # MLRB's supervisor-worker variant


SYSTEM = (
    "You are an ML researcher working in a sandboxed copy of a research codebase, one action per turn. "
    "Reply with ONE JSON object (optionally in a ```json block) with any of these fields:\n"
    '  "reasoning": what you observed, what you conclude, what you do next (always give it);\n'
    '  "files_to_write": {"path": "full new contents"} for editable files;\n'
    '  "command": one bash command run in the code directory (inspect data, check code): you get its exit code '
    "and output tail;\n"
    '  "submit_eval": true to run the current files as one experiment, scored on validation labels you never see;\n'
    '  "done": true (with "done_reason") to stop for good: the experiment with the best validation score so far '
    "is then the one scored on the hidden test (not your current files, unless they are that experiment), and "
    "experiments left unused are lost.\n"
    "Within a turn: files are written, then the command runs, then the evaluation (skipped if the command "
    "failed). Instead of files_to_write you may put SEARCH/REPLACE blocks after the JSON. Commands run "
    "without network, labels or test inputs; files you write persist, anything a command creates is gone "
    "after it ends. Command time counts against the compute budget; only submit_eval spends an experiment."
)


def _transcript(store: NodeStore, node: Node) -> list[dict[str, Any]]:
    return json.loads(store.blobs.text(node.transcript)) if node.transcript else []


def lane_nodes(store: NodeStore, lane: int) -> list[Node]:
    return sorted((n for n in store if n.operator == "react" and n.hints.get("lane", 0) == lane), key=lambda n: n.step)


def lane_history(ctx: OpContext, lane: int) -> list[dict[str, Any]]:
    """Every turn of a conversation, oldest first; a submit's observation is its experiment's result."""
    turns = []
    for node in lane_nodes(ctx.store, lane):
        for turn in _transcript(ctx.store, node):
            if turn.get("submitted") and node.executed:
                turn = {**turn, "observation": f"{turn['observation']}\n{_result(ctx, node)}",
                        "line": f"{turn['line']} -> node {node.id}: {prompts.result_line(ctx, node)}"}
            turns.append(turn)
    return turns


def _result(ctx: OpContext, node: Node) -> str:
    best = " (the best so far)" if (ctx.store.best() or node).id == node.id and node.primary is not None else ""
    return f"Experiment node {node.id}: {prompts.result_line(ctx, node)}; metrics: {prompts.metrics_line(node)}{best}." \
           f"\n{prompts.output_tail(ctx, node, 1500)}"


class ReactPolicy(StatelessPolicy):
    """One node at a time per conversation; a conversation ends with `done`. Everything else is in the store."""

    def __init__(self, cfg: ReactConfig):
        self.cfg = cfg

    def next_action(self, store: NodeStore, rng: Any) -> Action | None:
        busy = {p.hints.get("lane", 0) for p in store.pending()}
        for lane in range(self.cfg.conversations):
            nodes = lane_nodes(store, lane)
            if lane in busy or (nodes and any(t.get("done") for t in _transcript(store, nodes[-1]))):
                continue
            parent = next((n.id for n in reversed(nodes) if n.executed), ROOT)
            if self.cfg.supervisor:  # every assignment starts from the best solution so far
                parent = (store.best() or store.get(ROOT)).id
            return Action("react", (parent,), {"lane": lane}, f"lane:{lane}")
        return None


def parse_action(reply: str) -> tuple[dict[str, Any] | None, str]:
    """The JSON action in a reply, or why there is none."""
    fenced = re.search(r"```(?:json)?\s*\n(\{.*?\})\s*\n```", reply, re.DOTALL)
    if not fenced and "{" not in reply:
        return None, "no JSON object in the reply"
    text = fenced.group(1) if fenced else reply[reply.find("{"):]
    try:
        action, _ = json.JSONDecoder().raw_decode(text)
    except ValueError as exc:
        return None, f"no JSON action found ({exc})"
    if not isinstance(action, dict):
        return None, "the action must be a JSON object"
    unknown = set(action) - {"reasoning", "files_to_write", "command", "submit_eval", "done", "done_reason"}
    writes = action.get("files_to_write") or {}
    if unknown:
        return None, f"unknown fields {sorted(unknown)}"
    if not isinstance(writes, dict) or not all(isinstance(v, str) for v in writes.values()):
        return None, "files_to_write must map paths to full file contents (strings)"
    if action.get("command") is not None and not isinstance(action["command"], str):
        return None, "command must be one string"
    return action, ""


def _command_observation(result: Any, cfg: ReactConfig) -> tuple[str, str]:
    """(what the LLM sees now, one history line) for a command result."""
    if result.refused:  # nothing ran
        return f"command refused: {result.refused}", f"refused: {result.refused}"
    status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
    full = f"command finished: {status} after {result.seconds:.1f} s\nstdout:\n" \
           f"{tail_lines(result.stdout, cfg.stdout_tail_chars) or '(empty)'}\nstderr:\n" \
           f"{tail_lines(result.stderr, cfg.stderr_tail_chars) or '(empty)'}"
    return full, f"{status}, {result.seconds:.1f} s; stdout: {summarize(result.stdout.strip(), cfg.history_stdout_chars)}"


def take_turn(ctx: OpContext, reply: str, files: dict[str, str], last_eval: dict[str, str], cfg: ReactConfig,
              compute_used: list[float]) -> dict[str, Any]:
    """Apply one reply's action to `files` (in place) and return the turn record."""
    action, error = parse_action(reply)
    turn: dict[str, Any] = {"reply": reply}
    if action is None:
        return {**turn, "kinds": ["invalid"], "observation": f"error: {error}. Reply with one JSON action.",
                "line": f"invalid reply ({error})"}
    seen, line, wrote = [], [], {}
    for path, text in (action.get("files_to_write") or {}).items():
        if not ctx.task.is_editable(path) or path.startswith("/") or ".." in path.split("/"):
            seen.append(f"error: {path} is not editable; editable: {', '.join(ctx.task.editable)}")
        else:
            files[path], wrote[path] = text, ctx.store.blobs.put(text)
    if "<<<<<<< SEARCH" in reply:
        edited = apply_edits(reply, files, ctx.task.is_editable, "search_replace")
        if edited.ok and edited.changed:
            for path, text in edited.files.items():
                files[path], wrote[path] = text, ctx.store.blobs.put(text)
        elif not edited.ok:
            seen.append(f"error: SEARCH/REPLACE not applied: {edited.feedback}")
    if wrote:
        line.append(f"wrote {', '.join(sorted(wrote))}")
        seen.append(line[-1])
    kinds = (["files_to_write"] if wrote else []) + [k for k in ("command", "submit_eval", "done") if action.get(k)]
    command_ok = True  # FARBench: a failed command in the same action skips the evaluation
    if action.get("command"):
        result = ctx.run_command(dict(files), action["command"], cfg.command_timeout_s)
        compute_used[0] += result.charged_seconds
        full, short = _command_observation(result, cfg)
        seen.append(full)
        line.append(f"ran `{summarize(action['command'], 200)}`: {short}")
        command_ok = result.exit_code == 0 and not result.refused
    if action.get("submit_eval"):
        if not command_ok:
            seen.append("submit_eval skipped: the command in the same action failed")
        elif files == last_eval:
            seen.append("submit_eval refused: the files are exactly those already evaluated; change something first")
        elif ctx.steps_left <= 0:
            seen.append("submit_eval refused: no experiments left")
        else:
            turn.update(submitted=True)
            line.append("submitted an experiment")
    if action.get("done"):
        turn.update(done=str(action.get("done_reason") or "done"))
        line.append(f"done: {summarize(str(action.get('done_reason') or ''), 200)}")
    if not kinds:
        seen.append("error: the action did nothing; give files_to_write, command, submit_eval or done")
    reasoning = summarize(str(action.get("reasoning") or ""), 1200)
    return {**turn, "kinds": kinds or ["empty"], "wrote": wrote, "observation": "\n".join(seen), "reasoning": reasoning,
            "line": (f"{summarize(reasoning, 300)} -> " if reasoning else "") + ("; ".join(line) or "nothing done")}


def sandbox_note(ctx: OpContext, cfg: ReactConfig) -> str:
    """Where commands run, what they see, and when they are killed (the harness caps a command at the step
    limit: commands.CommandRunner)."""
    data = ctx.data_path or str(ctx.public_dir)
    limit = prompts.limit_text(ctx, min(cfg.command_timeout_s, ctx.budget.step_timeout_s))
    val = (" ".join(ctx.task.phases["val"]).replace("{python}", "python").replace("{data}", data)
           .replace("{output}", "<out>").replace("{seed}", "<seed>"))
    seed = " and any integer as <seed>" if "<seed>" in val else ""
    return (f"Commands run with bash in a fresh copy of the code directory holding your current files, with a private "
            f"writable /tmp. The public data is at {data} (read-only). An experiment runs `{val}` and the "
            f"harness scores what it writes to <out>; you can run that command yourself with /tmp/out as <out>{seed} to "
            f"check your code (no score: the labels are not there). Each command is killed at {limit}, as an experiment "
            "is (sooner if the compute budget runs out first). Commands and experiments share the compute budget.")


def _context(ctx: OpContext, cfg: ReactConfig, older: list[dict[str, Any]], files: dict[str, str],
             instruction: str, lane: int) -> str:
    runs = [n for n in (ctx.store if cfg.supervisor else lane_nodes(ctx.store, lane)) if n.executed and n.step > 0]
    shown = older[-cfg.history_entries:]
    lines = [f"({len(older) - len(shown)} earlier turns omitted)"] if len(older) > len(shown) else []
    lines += [f"- {t['line']}" for t in shown]
    sections = [prompts.task_section(ctx), prompts.setup_section(ctx, commands=True),
                prompts.harness_section(ctx),
                prompts.data_section(ctx, cfg, priority=40),
                Section("Sandbox", [sandbox_note(ctx, cfg)], 98),
                Section("Experiments so far", ["\n".join(f"- node {n.id}: {prompts.result_line(ctx, n)}; "
                                                         f"{summarize(n.plan, 300)}" for n in runs) or "(none yet)"], 75),
                Section("Earlier turns (one line each)", ["\n".join(lines), ""] if lines else [""], 50),
                Section("Current editable files", [prompts.files_block(files)], 95)]
    if instruction:
        sections.append(Section("Your assignment from the supervisor", [instruction], 100))
    return assemble(sections, cfg.prompt_chars)


def build_messages(ctx: OpContext, cfg: ReactConfig, history: list[dict[str, Any]], files: dict[str, str],
                   instruction: str, lane: int, status: str) -> list[dict[str, str]]:
    """System, the context with older turns summarised, then the last `history_detail` turns verbatim."""
    recent = history[-cfg.history_detail:] if cfg.history_detail else []
    messages = [{"role": "system", "content": SYSTEM + "\n\n" + format_instructions("search_replace")},
                {"role": "user", "content": _context(ctx, cfg, history[:len(history) - len(recent)], files,
                                                     instruction, lane)}]
    for turn in recent:
        messages.append({"role": "assistant", "content": head_lines(turn["reply"], 8000)})  # whole files can be long
        messages.append({"role": "user", "content": turn["observation"] or "(no output)"})
    messages[-1]["content"] += f"\n\n{status}"
    return messages


def supervise(ctx: OpContext, cfg: ReactConfig) -> tuple[str, Any]:
    """MLRB's supervisor: the next assignment for a fresh worker, from the experiments so far."""
    runs = [n for n in ctx.store if n.executed and n.step > 0]
    sections = [prompts.task_section(ctx), prompts.setup_section(ctx, commands=True), prompts.data_section(ctx, cfg, priority=40),
                Section("Assignments so far and their results", ["\n".join(
                    f"- node {n.id}: {prompts.result_line(ctx, n)}; assignment and report: {summarize(n.plan, 600)}"
                    for n in runs) or "(none yet)"], 80),
                Section("Your job", ["You supervise a worker that edits the code, runs commands and submits one "
                                     "experiment per assignment. Write its next assignment: one concrete idea to try "
                                     "on the best solution so far, why, and what to check before submitting. "
                                     "Plain text, at most 8 sentences."], 100)]
    call = ctx.llm.complete([{"role": "system", "content": prompts.SYSTEM},
                             {"role": "user", "content": assemble(sections, cfg.prompt_chars)}], operator="supervise")
    return ("" if call.error else call.response.strip()), call


def react(ctx: OpContext, parents: list[Node], action: Action, cfg: ReactConfig) -> Proposal:
    """Turns of one conversation until one experiment is submitted, the agent is done, or the turn cap."""
    lane = action.hints.get("lane", 0)
    history = [] if cfg.supervisor else lane_history(ctx, lane)
    last_eval = ctx.store.files(parents[0])
    files = dict(last_eval) if cfg.supervisor else ctx.store.files(ctx.store.get(ROOT))
    for turn in history:  # every write replayed: the files as the conversation left them
        files.update({path: ctx.store.blobs.text(digest) for path, digest in turn.get("wrote", {}).items()})
    calls, turns, instruction, used = [], [], "", [0.0]
    if cfg.supervisor:
        instruction, call = supervise(ctx, cfg)
        calls.append(call)
        if not instruction:
            return Proposal(files={}, edit_ok=False, feedback=f"supervisor call failed: {call.error}", llm_calls=calls)
    for n in range(cfg.max_turns_per_experiment):
        left = ctx.compute_left_s - used[0]
        status = (f"[turn {n + 1} of at most {cfg.max_turns_per_experiment} before an experiment; experiments left: "
                  f"{ctx.steps_left} of {ctx.budget.steps}; compute left: {max(left, 0.0):.0f} s] Your action:")
        call = ctx.llm.complete(build_messages(ctx, cfg, history + turns, files, instruction, lane, status),
                                operator="react")
        calls.append(call)
        if call.error:
            return Proposal(files={}, edit_ok=False, feedback=f"LLM call failed: {call.error}", llm_calls=calls,
                            transcript=turns)
        turns.append(take_turn(ctx, call.response, files, last_eval, cfg, used))
        plan = (f"{instruction}\nworker: " if instruction else "") + turns[-1].get("reasoning", "")
        if turns[-1].get("submitted"):
            return Proposal(files=dict(files), plan=plan, llm_calls=calls, transcript=turns)
        if turns[-1].get("done"):
            return Proposal(files=dict(files), plan=plan, changed=False, llm_calls=calls, transcript=turns,
                            feedback=f"the agent declared done: {turns[-1]['done']}")
    return Proposal(files=dict(files), changed=False, llm_calls=calls, transcript=turns,
                    feedback=f"{cfg.max_turns_per_experiment} turns without submit_eval; the conversation goes on")


def build(cfg: ReactConfig, task: TaskSpec) -> Agent:
    return Agent(policy=ReactPolicy(cfg), operators={"react": lambda ctx, parents, act: react(ctx, parents, act, cfg)})


@hookimpl
def researchbench_register_agents(register: Callable[[AgentSpec], None]) -> None:
    register(AgentSpec(name="react", config_class=ReactConfig, build=build, uses_llm=True,
                       description="LLM: ReAct with FARBench's actions (files, sandboxed commands, submit_eval, done)"))
