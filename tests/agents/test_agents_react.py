"""The ReAct agent: tool dispatch per action kind, malformed replies as failed turns, budget accounting
(commands charge compute, only submit_eval spends an experiment, done ends the run), the sandbox of a
command, the bounded prompt, end to end on causality, and a SIGKILL resume that keeps the conversation."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from researchbench.agents.react import ReactConfig, ReactPolicy, build_messages, parse_action, react, take_turn
from researchbench.benchmark.contract.agent_api import Action, OpContext
from researchbench.benchmark.records.journal import BlobStore
from researchbench.benchmark.run.commands import CommandResult, CommandRunner
from researchbench.benchmark.run.experiment import DATA_PLACE, data_path_in_jobs
from researchbench.benchmark.tasks.manifest import Budget, load_task
from conftest import (CAUSALITY_S_LEARNER, CAUSALITY_T_LEARNER, finished_at_least, journal_records, kill_run_when,
                      run_inprocess)
from trees import Tree


def _sr(path: str, old: str, new: str) -> str:
    return f"{path}\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"


def _act(**fields) -> str:
    return json.dumps({"reasoning": "because", **fields})


class FakeLLM:
    def __init__(self, replies: list[str]):
        self.replies, self.seen = list(replies), []

    def complete(self, messages, operator):
        self.seen.append((operator, messages))
        return SimpleNamespace(response=self.replies.pop(0), error="", truncated=False)


def _ctx(tmp_path: Path, llm=None, commands: list | None = None, exit_code: int = 0, steps_left: int = 5) -> OpContext:
    from researchbench.benchmark.plugins import get_registry

    tree = Tree(tmp_path)
    tree.store.get("0000").files = {"params.json": tree.store.blobs.put('{\n  "slope": 1.0\n}\n'),
                                    "model.py": tree.store.blobs.put("def predict(x, params):\n    return x\n")}
    task = load_task(get_registry().tasks["toy"])

    def run_command(files, command, timeout_s):
        commands.append((dict(files), command, timeout_s))
        return CommandResult(command, exit_code, False, 2.5, "out\n" * 3, "")

    return OpContext(task=task, store=tree.store, llm=llm, rng=random.Random(0), steps_left=steps_left,
                     budget=Budget(steps=5, compute_hours=1, step_timeout_s=30, usd=1),
                     run_command=run_command if commands is not None else None)


def test_each_action_kind_is_dispatched(tmp_path) -> None:
    commands: list = []
    ctx = _ctx(tmp_path, commands=commands)
    files = ctx.store.files(ctx.store.get("0000"))
    base = dict(files)
    used = [0.0]
    turn = take_turn(ctx, _act(files_to_write={"params.json": '{"slope": 3}'}, command="cat params.json"),
                     files, base, ReactConfig(), used)
    assert files["params.json"] == '{"slope": 3}' and turn["kinds"] == ["files_to_write", "command"]
    assert commands == [(files, "cat params.json", 600.0)] and used == [2.5]  # the command saw the new file
    assert ctx.store.blobs.text(turn["wrote"]["params.json"]) == '{"slope": 3}'
    assert "exit code 0" in turn["observation"] and not turn.get("submitted")
    turn = take_turn(ctx, _act(submit_eval=True) + "\n" + _sr("model.py", "    return x", "    return 2 * x"),
                     files, base, ReactConfig(), used)
    assert turn.get("submitted") and "2 * x" in files["model.py"]
    turn = take_turn(ctx, _act(done=True, done_reason="enough"), files, base, ReactConfig(), used)
    assert turn["done"] == "enough" and turn["kinds"] == ["done"]
    turn = take_turn(ctx, _act(files_to_write={"driver.py": "import os"}), files, base, ReactConfig(), used)
    assert "driver.py is not editable" in turn["observation"] and "driver.py" not in files


@pytest.mark.parametrize("reply, error", [
    ("I think we should try a T-learner.", "no JSON object"),
    ('{"command": ["ls"]}', "command must be one string"),
    ('{"files_to_write": {"model.py": 3}}', "files_to_write"),
    ('{"run": "ls"}', "unknown fields"),
])
def test_a_malformed_action_is_a_recorded_failed_turn(tmp_path, reply, error) -> None:
    assert parse_action(reply)[0] is None and error in parse_action(reply)[1]
    ctx = _ctx(tmp_path, commands=[])
    files = ctx.store.files(ctx.store.get("0000"))
    turn = take_turn(ctx, reply, files, dict(files), ReactConfig(), [0.0])
    assert turn["kinds"] == ["invalid"] and turn["observation"].startswith("error:") and turn["reply"] == reply


def test_submit_is_skipped_after_a_failed_command_and_refused_without_a_change(tmp_path) -> None:
    ctx = _ctx(tmp_path, commands=[], exit_code=1)
    files = ctx.store.files(ctx.store.get("0000"))
    base = dict(files)
    turn = take_turn(ctx, _act(command="false", submit_eval=True, files_to_write={"params.json": "{}"}), files, base,
                     ReactConfig(), [0.0])
    assert not turn.get("submitted") and "skipped" in turn["observation"]
    turn = take_turn(ctx, _act(submit_eval=True, files_to_write=dict(base)), files, base, ReactConfig(), [0.0])
    assert not turn.get("submitted") and "already evaluated" in turn["observation"]


def test_one_node_runs_turns_until_submit_and_records_them(tmp_path) -> None:
    llm = FakeLLM(["not an action", _act(command="python -c 'print(1)'"),
                   _act(files_to_write={"params.json": '{"slope": 3.0}'}, submit_eval=True)])
    ctx = _ctx(tmp_path, llm=llm, commands=[])
    proposal = react(ctx, [ctx.store.get("0000")], Action("react", ("0000",), {"lane": 0}), ReactConfig())
    assert proposal.changed and proposal.files["params.json"] == '{"slope": 3.0}'
    assert [t["kinds"] for t in proposal.transcript] == [["invalid"], ["command"], ["files_to_write", "submit_eval"]]
    assert len(proposal.llm_calls) == 3 and {op for op, _ in llm.seen} == {"react"}
    last = llm.seen[-1][1]  # the conversation so far is in the prompt: replies and observations alternate
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "error: no JSON" in last[3]["content"] and "exit code 0" in last[5]["content"]
    ctx = _ctx(tmp_path / "b", llm=FakeLLM([_act(command="ls")] * 2), commands=[])
    capped = react(ctx, [ctx.store.get("0000")], Action("react", ("0000",)), ReactConfig(max_turns_per_experiment=2))
    assert not capped.changed and "2 turns without submit_eval" in capped.feedback


def test_older_turns_are_summarised_and_the_prompt_stays_bounded(tmp_path) -> None:
    ctx = _ctx(tmp_path, commands=[])
    files = ctx.store.files(ctx.store.get("0000"))
    turns = [{"reply": _act(command=f"echo {i}") + "x" * 5000, "observation": "o" * 3000, "line": f"ran echo {i}",
              "kinds": ["command"]} for i in range(40)]
    cfg = ReactConfig(history_detail=3, history_entries=20)
    messages = build_messages(ctx, cfg, turns, files, "", 0, "[status]")
    assert len(messages) == 2 + 2 * 3 and messages[-1]["content"].endswith("[status]")
    context = messages[1]["content"]
    assert "(17 earlier turns omitted)" in context and "ran echo 36" in context and "ran echo 37" not in context
    assert sum(len(m["content"]) for m in messages) < 80000


def test_policy_ends_a_conversation_at_done_and_runs_one_node_per_lane(tmp_path) -> None:
    tree = Tree(tmp_path)
    policy = ReactPolicy(ReactConfig(conversations=2))
    first = policy.next_action(tree.store, random.Random(0))
    assert first == Action("react", ("0000",), {"lane": 0}, "lane:0")
    tree.claim("react", ("0000",), {"lane": 0})
    assert policy.next_action(tree.store, random.Random(0)).hints == {"lane": 1}  # lane 0 is busy
    tree.claim("react", ("0000",), {"lane": 1})
    assert policy.next_action(tree.store, random.Random(0)) is None
    ended = Tree(tmp_path / "t")
    node = ended.add("react", ("0000",), 2.0, hints={"lane": 0})
    node.transcript = ended.store.blobs.put(json.dumps([{"reply": "", "kinds": ["done"], "done": "x", "line": ""}]))
    assert ReactPolicy(ReactConfig()).next_action(ended.store, random.Random(0)) is None


def test_a_command_sees_the_public_data_but_not_labels_or_test_inputs(toy, tmp_path) -> None:
    from researchbench.benchmark.executors.local import LocalExecutor

    executor = LocalExecutor()
    runner = CommandRunner(toy, executor, BlobStore(tmp_path / "blobs"), tmp_path / "scratch" / "0001-cmd",
                           step_timeout_s=30, compute_left_s=100.0)
    try:
        files = {"params.json": '{"slope": 7}'}
        data = data_path_in_jobs(toy, executor)  # the job sees the public data at a fixed place, not the host's
        assert data == DATA_PLACE
        seen = runner.run(files, f"cat params.json; ls {data}; ls {toy.public_dir}", 20)
        assert seen.exit_code != 0 and '"slope": 7' in seen.stdout and "val_x.json" in seen.stdout
        assert "No such file" in seen.stderr  # the host path of the data does not exist inside
        for secret in (toy.labels_dir, toy.test_inputs_dir):
            probe = runner.run(files, f"ls {secret} || cat {secret}/*", 20)
            assert probe.exit_code != 0 and "_y.json" not in probe.stdout and "test_x" not in probe.stdout
        short = CommandRunner(toy, executor, BlobStore(tmp_path / "b1"), tmp_path / "scratch" / "0003-cmd", 1.5, 100.0)
        busy = short.run(files, "while :; do :; done", 1000)  # capped by the step limit, not the asked 1000 s
        assert busy.timed_out and "[harness: killed: over the CPU-time limit of 1.5 s" in busy.stderr
        over = CommandRunner(toy, executor, BlobStore(tmp_path / "b2"), tmp_path / "scratch" / "0002-cmd", 30, 0.5)
        assert over.run(files, "echo hi", 10).refused and over.records[0]["seconds"] == 0.0
    finally:
        executor.shutdown()
    assert [r["command"] for r in runner.records][:1] == [f"cat params.json; ls {DATA_PLACE}; ls {toy.public_dir}"]
    assert {r["clock"] for r in runner.records} == {"cpu"}  # charged in CPU seconds, like the step limit
    assert runner.seconds == pytest.approx(sum(r["cpu_seconds"] for r in runner.records))


def _script(path: Path, replies: list[str]) -> Path:
    path.write_text("".join(json.dumps({"reply": r, "operator": "react"}) + "\n" for r in replies))
    return path


TOY_REPLIES = [
    _act(command="cat params.json"),
    _act(files_to_write={"params.json": '{\n  "slope": 2.0\n}\n'}, submit_eval=True),
    "no action here",
    _act(submit_eval=True) + "\n" + _sr("params.json", '  "slope": 2.0', '  "slope": 3.0'),
    _act(done=True, done_reason="the slope is exact"),
]


def test_commands_charge_compute_and_only_submit_spends_an_experiment(toy, tmp_path) -> None:
    summary, _ = run_inprocess("agent=react", "task=toy", "budget.steps=5", f"results_dir={tmp_path}", "llm=scripted",
                               f"llm.script={_script(tmp_path / 'toy.jsonl', TOY_REPLIES)}")
    records = journal_records(Path(summary["run_dir"]))
    nodes = [r["node"] for r in records if r["kind"] == "finished"]
    assert [(n["operator"], n["status"], n["parents"]) for n in nodes[1:]] == \
        [("react", "ok", ["0000"]), ("react", "ok", ["0001"]), ("react", "no_op", ["0002"])]
    assert nodes[2]["primary"] < nodes[1]["primary"] < nodes[0]["primary"]
    assert summary["steps"]["experiments"] == 2 and "nothing left" in summary["stop_reason"]  # done ended it
    (command,) = nodes[1]["tool_calls"]
    assert command["command"] == "cat params.json" and command["exit_code"] == 0 and command["seconds"] > 0
    counters = [r for r in records if r["kind"] == "finished"][-1]["checkpoint"]["counters"]
    assert command["clock"] == "cpu" and 0 < command["cpu_seconds"]
    executed = [n for n in nodes if n["executed"]]
    assert {n["clock"] for n in executed} == {"cpu"} and all(n["cpu_seconds"] > 0 for n in executed)
    assert counters["compute_s"] == pytest.approx(sum(n["cpu_seconds"] for n in executed) + command["cpu_seconds"],
                                                  abs=0.01)
    assert counters["clock"] == "cpu" and summary["budget"]["clock"] == "cpu"


@pytest.mark.slow
@pytest.mark.timeout(1800)  # several causality runs; on a loaded machine each takes minutes
def test_react_edits_causality_end_to_end(causality, tmp_path: Path) -> None:
    replies = [_act(command="python -c \"import pandas as pd; print(pd.read_csv('" + DATA_PLACE
                    + "/train.csv').groupby('t').y.mean())\""),
               _act(submit_eval=True) + "\n" + _sr("model.py", CAUSALITY_S_LEARNER, CAUSALITY_T_LEARNER),
               _act(done=True, done_reason="one experiment is enough for this test")]
    summary, _ = run_inprocess("agent=react", "task=causality", "budget.steps=3", "budget.step_timeout_s=600",
                               "budget.test_timeout_s=900",
                               f"results_dir={tmp_path}", "llm=scripted",
                               f"llm.script={_script(tmp_path / 'c.jsonl', replies)}")
    nodes = [r["node"] for r in journal_records(Path(summary["run_dir"])) if r["kind"] == "finished"]
    assert [(n["status"], len(n["tool_calls"])) for n in nodes[1:]] == [("ok", 1), ("no_op", 0)]
    assert nodes[1]["tool_calls"][0]["exit_code"] == 0
    assert nodes[1]["primary"] < nodes[0]["primary"] and summary["best"]["test"] is not None


def _tree(run_dir: Path) -> list[tuple]:
    nodes = [r["node"] for r in journal_records(run_dir) if r["kind"] == "finished"]
    replies = [[t["reply"] for t in json.loads(BlobStore(run_dir / "blobs").text(n["transcript"]) or "[]")]
               for n in nodes]
    return [(n["id"], n["parents"], sorted(n["files"].items()), n["status"], n["primary"],
             [c["command"] for c in n["tool_calls"]]) for n in nodes] + [replies]


def test_killed_react_run_resumes_the_same_conversation(toy, tmp_path: Path) -> None:
    script = _script(tmp_path / "toy.jsonl", TOY_REPLIES)
    args = ["agent=react", "task=toy", "budget.steps=5", "quiet=true", "llm=scripted", f"llm.script={script}"]
    reference, _ = run_inprocess(*args, f"results_dir={tmp_path / 'reference'}")  # in process: no second CLI start
    killed = tmp_path / "killed"
    kill_run_when(killed, args, finished_at_least(2))  # node 0001 (a command and a submit) is done, 0002 is not
    _, output = run_inprocess(*args, f"results_dir={killed}")
    assert "resuming" in output
    (run_dir,) = (killed / "react" / "toy").iterdir()
    assert _tree(run_dir) == _tree(Path(reference["run_dir"]))
    later = [r["node"] for r in journal_records(run_dir) if r["kind"] == "finished"][2]["llm_calls"][0]
    prompt = BlobStore(run_dir / "blobs").text(later["messages"])
    assert "cat params.json" in prompt  # the resumed node's prompt carries the turns before the kill


def test_supervisor_assigns_and_a_fresh_worker_starts_from_the_best(tmp_path) -> None:
    llm = FakeLLM(["Try slope 3: the data look linear with slope near 3.",
                   _act(files_to_write={"params.json": '{"slope": 3.0}'}, submit_eval=True)])
    ctx = _ctx(tmp_path, llm=llm, commands=[])
    old = ctx.store.get("0000")
    worse = Tree(tmp_path / "x").add("react", ("0000",), 9.0, hints={"lane": 0})  # an earlier, worse conversation
    worse.transcript = ctx.store.blobs.put(json.dumps([{"reply": "r", "kinds": ["command"], "line": "ran ls",
                                                        "observation": "SECRET-OLD-TURN"}]))
    worse.step, worse.id, worse.files = 1, "0001", dict(old.files)
    ctx.store.add(worse)
    cfg = ReactConfig(supervisor=True)
    action = ReactPolicy(cfg).next_action(ctx.store, random.Random(0))
    assert action.parents == ("0000",)  # the best so far (lower is better: 3.0 < 9.0), not the lane's last node
    proposal = react(ctx, [ctx.store.get("0000")], action, cfg)
    assert [op for op, _ in llm.seen] == ["supervise", "react"]
    worker = "\n".join(m["content"] for m in llm.seen[1][1])
    assert "Try slope 3" in worker and "SECRET-OLD-TURN" not in worker  # a fresh worker with its assignment
    assert proposal.changed and proposal.plan.startswith("Try slope 3")


def test_sandbox_note_names_the_output_dir_without_template_placeholders(tmp_path) -> None:
    from researchbench.agents.react import sandbox_note

    from researchbench.benchmark.plugins import get_registry

    for task in ("toy", "fairness"):  # fairness's val phase passes --seed {seed}
        ctx = dataclasses.replace(_ctx(tmp_path / task), task=load_task(get_registry().tasks[task]))
        note = sandbox_note(ctx, ReactConfig())
        assert "{" not in note and "}" not in note, note  # no unrendered {output}/{python}/{data}/{seed}
        assert "<out>" in note and "/tmp/out" in note


def test_the_done_action_says_which_solution_is_scored_and_that_unused_experiments_are_lost() -> None:
    """A strong LLM (issue 27, react on fairness) declared done with 5 of 10 experiments left, believing its current
    files were the final solution; the harness scores the best-on-validation experiment."""
    from researchbench.agents.react import SYSTEM

    done = next(line for line in SYSTEM.splitlines() if line.lstrip().startswith('"done"'))
    assert "best validation score" in done and "hidden test" in done and "not your current files" in done
    assert "unused are lost" in done


def test_the_sandbox_note_gives_the_limit_a_command_is_killed_at(tmp_path) -> None:
    """Issue 27 (react on fairness): nothing said a command has a limit of its own, and a sweep was killed at the
    step limit. The note gives the limit the harness enforces: the step limit, or command_timeout_s if lower."""
    from researchbench.agents.react import sandbox_note

    ctx = _ctx(tmp_path)
    ctx.store.get("0000").clock = "cpu"
    assert "killed at 30 s of CPU time" in sandbox_note(ctx, ReactConfig())  # step_timeout_s 30, command 600
    assert "killed at 12 s of CPU time" in sandbox_note(ctx, ReactConfig(command_timeout_s=12))
    seen = []
    runner = CommandRunner(None, None, BlobStore(tmp_path / "blobs"), tmp_path / "scratch", step_timeout_s=30,
                           compute_left_s=1000)
    runner._run = lambda files, command, limit: seen.append(limit) or CommandResult(command, 0, False, 1.0, "", "")
    runner.run({}, "true", ReactConfig().command_timeout_s)
    assert seen == [30]  # what the note says is what the runner enforces
