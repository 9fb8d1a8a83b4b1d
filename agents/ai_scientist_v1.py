"""The AI Scientist v1 (SakanaAI/AI-Scientist) as FML-bench runs it: ideas first, then one bounded chain
of experiments per idea, with notes carried from run to run.

The first step generates `num_ideas` ideas (each refined over `num_reflections` rounds, each seeing
the ideas before it), judges their novelty and keeps the novel ones, best rated first; the same step
then implements the first idea. Each idea starts again from the task's baseline and gets up to
`max_runs` experiments, each building on the previous run's code: run 1 plans the idea's experiments
and implements the first; after run k the LLM reads the results, updates the notes and implements
the next, or answers ALL_COMPLETED to end the idea. A failed run is retried from the failed code up
to `max_retries_per_run` times; then the idea is abandoned. When every idea is used and budget is
left, a new batch of ideas is generated, seeing the earlier ideas and what came of them.

The notes (AI Scientist's notes.txt) are the agent's own text, not a file of the task: every reply
carries the whole updated notes between <notes> tags, they are stored on the node (Node.memo) and shown
in the next run's prompt. So they are never parsed as Python (FML-bench's bug 9 made its notes edits
fail silently) and never reach the sandbox. The novelty check is offline (one LLM judgement per idea
against the baseline and the other ideas): AI Scientist searches Semantic Scholar, which a sandboxed
run cannot reach, and FML-bench hard-blocks the check altogether. Ranking by the LLM's own ratings
(interestingness + feasibility + novelty) is ours: AI Scientist runs ideas in generated order, which at
10-50 experiments would leave the best-rated ideas untried. Policy state (ideas, one chain record per
idea) is JSON, checkpointed with every node; with K experiments in flight, different ideas run at once.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass
from typing import Any, Callable

from researchbench.agents.kit import operators, prompts
from researchbench.agents.kit.prompts import PromptConfig
from researchbench.agents.kit.text import Section, head_lines
from researchbench.agents.kit.tree import ROOT
from researchbench import OK, Action, Agent, AgentSpec, Node, NodeStore, OpContext, Proposal, TaskSpec, domain, hookimpl

COMPLETED = "ALL_COMPLETED"
NOTES_RE = re.compile(r"<notes>(.*?)</notes>", re.DOTALL | re.IGNORECASE)
FORMAT = ("Before the plan, give the complete updated notes between <notes> and </notes> (they replace the "
          "current notes; a colleague writes up the work from them).")
FIRST_RUN = (
    "Implement the idea above. You have up to {max_runs} run{s} (experiments) for it and need not use them all. "
    "First plan the list of experiments you want to run and write the plan into the notes; then implement the "
    "first one. The baseline's result is already known (see the notes): do not re-run the baseline. Keep each "
    "run well inside the time limit.")
NEXT_RUN = (
    "Run {done} of this idea completed: {result}. Decide whether the plan needs to change given this result (it "
    "often does not). Update the notes with everything about run {done} that a write-up needs: what was run and "
    "what it gave. Then implement the next experiment on your list (run {run} of at most {max_runs}). If the "
    "idea's experiments are finished, reply with the notes and the word " + COMPLETED + " instead of edits (the "
    "experiments it leaves go to the next idea).")
RETRY = ("Run {run} of this idea failed ({reason}), attempt {attempt} of {max_tries}. Find the cause in the output "
         "above and fix it; keep the idea and the experiment.")


@dataclass
class AIScientistV1Config(PromptConfig):
    name: str = "ai_scientist_v1"
    # FML-bench generates 25 ideas up front, of which ~10 fit in 50 experiments at 5 runs each; 10 is
    # that, and a further batch is generated if the budget outlasts them.
    num_ideas: int = domain(10, ge=1)
    num_reflections: int = domain(3, ge=0)  # FML-bench's (AI Scientist's own default is 5)
    novelty_check: bool = True  # AI Scientist checks novelty (FML-bench hard-blocks it); offline here
    rank_ideas: bool = True  # ours: best-rated ideas first (see above)
    max_runs: int = domain(5, ge=1)  # AI Scientist's and FML-bench's
    max_retries_per_run: int = domain(4, ge=1)  # AI Scientist's max_iters and FML-bench's
    use_early_completion: bool = True  # FML-bench's: ALL_COMPLETED ends an idea early
    notes_chars: int = domain(4000, ge=0)


def select_ideas(ideas: list[dict], cfg: AIScientistV1Config) -> list[dict]:
    """The novel ideas (all, without a novelty check), best rated first when ranking."""
    kept = [i for i in ideas if i.get("novel", True) or not cfg.novelty_check]
    if cfg.rank_ideas:
        kept.sort(key=lambda i: -sum(i.get(k, 0) for k in operators.RATINGS))  # stable: ties keep their order
    return kept


def idea_of(node: Node) -> int | None:
    value = node.memo.get("idea", node.hints.get("idea"))
    return None if value is None else int(value)


def known_ideas(store: NodeStore) -> list[dict]:
    """Every idea generated so far, in order, with what came of it (for the next batch's prompt)."""
    ideas = [dict(i) for n in store for i in n.memo.get("ideas", [])]
    for k, idea in enumerate(ideas):
        scored = [n for n in store if idea_of(n) == k and n.status == OK]
        runs = [n for n in store if idea_of(n) == k and n.executed]
        if runs:
            best = min(scored, key=lambda n: n.primary if not store.metric.higher_is_better else -n.primary, default=None)
            idea["outcome"] = (f"{len(runs)} run(s); best {store.metric.name} = {best.primary:.5g}" if best
                               else f"{len(runs)} run(s), all failed")
    return ideas


def chain_notes(store: NodeStore, idea: int) -> str:
    notes = [n.memo["notes"] for n in store if idea_of(n) == idea and n.memo.get("notes")]
    return notes[-1] if notes else ""


class AIScientistV1Policy:
    def __init__(self, cfg: AIScientistV1Config):
        self.cfg = cfg
        self.ideas: list[dict] = []
        self.chains: dict[str, dict[str, Any]] = {}  # idea index -> {head, run, tries, done}

    def busy(self, store: NodeStore, idea: int | None) -> bool:
        return any(p.hints.get("idea") == idea and not p.hints.get("ideate") for p in store.pending()) \
            if idea is not None else any(p.hints.get("ideate") for p in store.pending())

    def next_action(self, store: NodeStore, rng: random.Random) -> Action | None:
        for key, chain in self.chains.items():  # an idea under way whose next run nobody holds
            if not chain["done"] and not self.busy(store, int(key)):
                run, tries = chain["run"], chain["tries"]
                return Action("run", (chain["head"],), {"idea": int(key), "run": run, "try": tries + 1},
                              f"idea{key}:run{run}" + (f":try{tries + 1}" if tries else ""))
        fresh = next((k for k in range(len(self.ideas)) if str(k) not in self.chains), None)
        if fresh is not None:
            self.chains[str(fresh)] = {"head": ROOT, "run": 1, "tries": 0, "done": False}
            return Action("run", (ROOT,), {"idea": fresh, "run": 1, "try": 1}, f"idea{fresh}:run1")
        if self.busy(store, None):
            return None  # ideas are being generated: wait for them
        return Action("run", (ROOT,), {"ideate": True, "offset": len(self.ideas), "run": 1, "try": 1}, "ideate")

    def observe(self, node: Node, store: NodeStore) -> None:
        if node.hints.get("ideate"):
            self.ideas += [dict(i) for i in node.memo.get("ideas", [])]
            if idea_of(node) is None:
                return
            self.chains[str(idea_of(node))] = {"head": ROOT, "run": 1, "tries": 0, "done": False}
        chain = self.chains.get(str(idea_of(node)))
        if chain is None:
            return
        if node.memo.get("completed"):
            chain["done"] = True
        elif node.status == OK:
            chain.update(head=node.id, run=chain["run"] + 1, tries=0, done=chain["run"] >= self.cfg.max_runs)
        else:
            chain["tries"] += 1
            if node.executed:
                chain["head"] = node.id  # the next attempt fixes the failed code, as AI Scientist's coder does
            chain["done"] = chain["tries"] >= self.cfg.max_retries_per_run

    def state_dict(self) -> dict[str, Any]:
        return {"ideas": self.ideas, "chains": self.chains}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.ideas = [dict(i) for i in state["ideas"]]
        self.chains = {k: dict(v) for k, v in state["chains"].items()}


def notes_and_edits(reply: str) -> tuple[str, str]:
    """(the notes between <notes> tags, the reply without them)."""
    found = NOTES_RE.findall(reply)
    return (found[-1].strip() if found else ""), NOTES_RE.sub("", reply)


def run(cfg: AIScientistV1Config, ctx: OpContext, parents: list[Node], action: Action) -> Proposal:
    """One run of an idea; the first step of a batch generates the ideas first."""
    calls, memo = [], {}
    if action.hints.get("ideate"):
        generated, calls = operators.ideate(ctx, cfg, ctx.store.get(ROOT), cfg.num_ideas, cfg.num_reflections,
                                            cfg.novelty_check, known_ideas(ctx.store))
        chosen = select_ideas(generated, cfg)
        memo = {"ideas": chosen, "dropped": [i["Name"] for i in generated if i not in chosen]}
        if not chosen:
            return Proposal(files={}, edit_ok=False, llm_calls=calls, memo=memo,
                            feedback=f"idea generation gave no usable idea ({len(generated)} generated, none kept)")
        memo["idea"] = action.hints["offset"]
        idea = chosen[0]
    else:
        idea = known_ideas(ctx.store)[action.hints["idea"]]
    index, run_no, attempt = memo.get("idea", action.hints.get("idea")), action.hints["run"], action.hints["try"]
    parent = parents[0]
    notes = chain_notes(ctx.store, index) or (
        f"# {idea['Title']}\n## Run 0: baseline\n"
        f"Result: {prompts.result_line(ctx, ctx.store.get(ROOT))} (the task's baseline, node 0000)")
    role = "debug" if parent.executed and parent.status != OK and attempt > 1 else "improve"
    if role == "debug":
        job = RETRY.format(run=run_no, reason=parent.bug_reason or "error", attempt=attempt, max_tries=cfg.max_retries_per_run)
    else:
        runs = min(cfg.max_runs, run_no - 1 + ctx.steps_left)  # what the run's budget still allows this idea
        job = FIRST_RUN.format(max_runs=runs, s="s" if runs != 1 else "") if run_no == 1 else NEXT_RUN.format(
            done=run_no - 1, result=f"{prompts.result_line(ctx, parent)}; metrics: {prompts.metrics_line(parent)}",
            run=run_no, max_runs=runs)
    extra = [Section("The idea", [prompts.idea_text(idea, prompts.IDEA_CHARS)], 95),
             Section("Notes (notes.txt)", [f"````\n{head_lines(notes, cfg.notes_chars).rstrip()}\n````"], 92)]
    proposal = operators.edit(ctx, parents, action, role, cfg, extra=extra,
                              job=f"{job}\n\n{FORMAT}", reply_edits=lambda reply: notes_and_edits(reply)[1])
    reply = proposal.llm_calls[-1].response if proposal.llm_calls else ""
    memo["notes"] = head_lines(notes_and_edits(reply)[0], cfg.notes_chars) if reply else ""
    if cfg.use_early_completion and COMPLETED in reply and run_no > 1:
        memo["completed"] = True
        proposal = Proposal(files={}, plan=proposal.plan, changed=False, llm_calls=proposal.llm_calls,
                            feedback=f"{COMPLETED}: the idea's experiments are finished")
    proposal.llm_calls = calls + proposal.llm_calls
    proposal.memo = memo
    return proposal


def build(cfg: AIScientistV1Config, task: TaskSpec) -> Agent:
    return Agent(policy=AIScientistV1Policy(cfg), operators={"run": functools.partial(run, cfg)})


@hookimpl
def researchbench_register_agents(register: Callable[[AgentSpec], None]) -> None:
    register(AgentSpec(name="ai_scientist_v1", config_class=AIScientistV1Config, build=build, uses_llm=True,
                       description="LLM: The AI Scientist v1 - ideas generated and filtered first, a chain of runs per idea with notes"))
