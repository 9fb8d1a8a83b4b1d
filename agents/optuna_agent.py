"""Optuna agent: no LLM, TPE over the knobs the task manifest declares.

The offline default and the floor every LLM agent must beat: it only sets hyper-parameters in the
manifest's knob file. Its study is rebuilt from the node store each step and its sampler is seeded
from the step's RNG, so resume needs no state and replays the same choices.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, Callable

from researchbench import (BASELINE_ID, Action, Agent, AgentSpec, Node, NodeStore, OpContext, Proposal, StatelessPolicy,
                           TaskSpec, UserError, domain, hookimpl)


@dataclass
class OptunaConfig:
    name: str = "optuna"
    n_startup_trials: int = domain(4, ge=0)  # random trials before TPE models the space
    multivariate: bool = True


def _distributions(task: TaskSpec) -> dict[str, Any]:
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    out: dict[str, Any] = {}
    for name, knob in task.knobs.space.items():
        if knob.type == "categorical":
            out[name] = CategoricalDistribution(list(knob.choices))
        elif knob.type == "int":
            out[name] = IntDistribution(int(knob.low), int(knob.high), log=knob.log)
        else:
            out[name] = FloatDistribution(float(knob.low), float(knob.high), log=knob.log)
    return out


class OptunaPolicy(StatelessPolicy):
    def __init__(self, cfg: OptunaConfig, task: TaskSpec):
        self.cfg, self.task = cfg, task
        self.distributions = _distributions(task)

    def _params(self, node: Node, store: NodeStore) -> dict[str, Any] | None:
        """The knob values a node ran with (the baseline's come from its knob file)."""
        if node.operator == "tune":
            return node.hints.get("params")
        try:
            values = json.loads(store.files(node)[self.task.knobs.file])
        except (KeyError, ValueError):
            return None
        params = {k: values[k] for k in self.distributions if k in values}
        return params if len(params) == len(self.distributions) else None

    def next_action(self, store: NodeStore, rng: random.Random) -> Action:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        direction = "maximize" if self.task.metric.higher_is_better else "minimize"
        sampler = optuna.samplers.TPESampler(seed=rng.randrange(2**31), n_startup_trials=self.cfg.n_startup_trials,
                                             multivariate=self.cfg.multivariate)
        study = optuna.create_study(direction=direction, sampler=sampler)
        for node in store:
            params = self._params(node, store) if node.executed else None
            if params is None:
                continue
            state = optuna.trial.TrialState.COMPLETE if node.status == "ok" else optuna.trial.TrialState.FAIL
            try:
                study.add_trial(optuna.trial.create_trial(
                    params=params, distributions=self.distributions, state=state,
                    value=node.primary if state == optuna.trial.TrialState.COMPLETE else None))
            except ValueError:  # e.g. a baseline value outside the declared space: not a trial of this study
                continue
        trial = study.ask(self.distributions)
        return Action("tune", (BASELINE_ID,), hints={"params": trial.params})


def tune(ctx: OpContext, parents: list[Node], action: Action) -> Proposal:
    """Write the sampled knob values into the knob file, keeping its other keys."""
    knob_file = ctx.task.knobs.file
    files = ctx.store.files(parents[0])
    values = json.loads(files.get(knob_file) or "{}")
    values.update(action.hints["params"])
    new = json.dumps(values, indent=2, sort_keys=True) + "\n"
    pretty = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in action.hints["params"].items())
    return Proposal(files={**files, knob_file: new}, plan=f"set {pretty}", changed=new != files.get(knob_file))


def build(cfg: OptunaConfig, task: TaskSpec) -> Agent:
    if task.knobs is None:
        raise UserError(f"task '{task.name}' declares no knobs, so agent=optuna has nothing to tune; "
                        f"use an LLM agent (agent=greedy)")
    return Agent(policy=OptunaPolicy(cfg, task), operators={"tune": tune})


@hookimpl
def researchbench_register_agents(register: Callable[[AgentSpec], None]) -> None:
    register(AgentSpec(name="optuna", config_class=OptunaConfig, build=build, uses_llm=False,
                       description="no LLM: Optuna TPE over the task's declared knobs"))
