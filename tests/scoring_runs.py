"""Build run directories for the scoring tests and benchmarks/metrics_speed.py without running anything:
the journal, blobs and summary.json in the shapes the engine writes them, from a list of node specs.
Also builds a tiny RoBERTa (random weights, a byte-level BPE trained on the spot) so embedding code runs
offline in seconds."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from researchbench.benchmark.records.journal import OK, BlobStore, Journal, Node, write_json_atomic
from researchbench.benchmark.records.kinds import Checkpoint, Final, Finished, Header, Pending


@dataclass
class Step:
    """One node to write: status ok/buggy/edit_failed/no_op/agent_failed; `files` default to the parent's."""

    id: str
    operator: str
    status: str
    primary: float | None = None
    parents: list[str] = field(default_factory=list)
    seconds: float = 1.0
    files: dict[str, str] | None = None
    exit_code: int | None = None
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    plan: str = ""
    usd: float = 0.0
    tokens: int = 0


def write_run(root: Path, agent: str, task: str, seed: int, steps: list[Step], *, direction: str = "lower",
              floor: float = 20.0, target: float = 0.0, best_possible: float | None = None,
              baseline_test: float | None = None, best_test: float | None = None, budget_steps: int = 10,
              compute_hours: float = 1.0, usd_limit: float = 1.0, wall_seconds: float = 60.0,
              domain: str = "testing", config: dict[str, Any] | None = None, run_id: str | None = None,
              status: str = "finished", abort_cause: str | None = None, version: str = "1",
              finished_at: float = 1_700_000_000.0, metric: str = "score",
              environment: dict[str, Any] | None = None,
              noise: dict[str, Any] | None = None, uses_llm: bool | None = None) -> Path:
    """A run directory as the engine leaves it; `status`/`abort_cause` as an interrupted or aborted run
    records them (an aborted run: status "aborted" and the cause in one line). `uses_llm` is what the agent's
    spec said (recorded in the summary); by default every agent but optuna asks an LLM."""
    run_dir = Path(root) / agent / task / (run_id or f"seed{seed}-{budget_steps}")
    run_dir.mkdir(parents=True)
    blobs, journal = BlobStore(run_dir / "blobs"), Journal(run_dir / "journal.jsonl")
    journal.append(Header(config_hash="x", created_at=0.0, provenance={"seed": seed, "task": task}))
    nodes: dict[str, Node] = {}
    best: Node | None = None
    usd = tokens = experiments = 0
    for number, s in enumerate(steps):
        files = s.files if s.files is not None else \
            {k: blobs.text(v) for k, v in nodes[s.parents[0]].files.items()} if s.parents else {"model.py": "x = 1\n"}
        executed = s.status in (OK, "buggy")
        calls = [{"model": "m", "operator": s.operator, "prompt_tokens": s.tokens // 2,
                  "completion_tokens": s.tokens - s.tokens // 2, "usd": s.usd,
                  "messages": blobs.put(json.dumps([{"role": "user", "content": f"improve {s.id}"}])),
                  "response": blobs.put(f"reply for {s.id}")}] if s.tokens or s.usd else []
        node = Node(id=s.id, step=number, operator=s.operator, parents=list(s.parents), plan=s.plan, status=s.status,
                    files={k: blobs.put(v) for k, v in sorted(files.items())} if executed else {},
                    executed=executed, exit_code=s.exit_code if s.exit_code is not None else (0 if s.status == OK else
                                                                                              (1 if executed else None)),
                    timed_out=s.timed_out, seconds=s.seconds if executed else 0.0,
                    stdout=blobs.put(s.stdout) if executed else "", stderr=blobs.put(s.stderr) if executed else "",
                    metrics={"score": s.primary} if s.primary is not None else {}, primary=s.primary,
                    llm_calls=calls, bug_reason="exit code 1" if s.status == "buggy" else "")
        if executed and node.parents:
            node.diff = blobs.put(f"--- a\n+++ b\n@@ {s.id} @@\n")
        nodes[s.id] = node
        usd += s.usd
        tokens += s.tokens
        experiments += executed and s.id != "0000"
        if node.status == OK and node.primary is not None and (
                best is None or (node.primary > best.primary if direction == "higher" else node.primary < best.primary)):
            best = node
        journal.append(Pending(id=s.id, step=number, operator=s.operator, at=0.0))
        journal.append(Finished(node, Checkpoint(policy=None, counters={}, usage={})))
    base = nodes.get("0000")
    if status == "finished":
        journal.append(Final(stop_reason="", at=finished_at, baseline={"primary": baseline_test},
                             best={"primary": best_test}))
    summary = {
        "status": status, "agent": agent, "uses_llm": agent != "optuna" if uses_llm is None else uses_llm,
        "task": task, "task_version": version, "domain": domain, "seed": seed,
        "run_dir": str(run_dir),
        "metric": {"name": metric, "direction": direction, "floor": floor, "target": target,
                   "best_possible": best_possible},
        "baseline": {"val": base.primary if base else None, "test": baseline_test},
        "best": {"node": best.id if best else None, "val": best.primary if best else None, "test": best_test},
        "steps": {"experiments": experiments, "nodes": len(nodes)},
        "budget": {"limits": {"experiments": budget_steps, "compute_hours": compute_hours, "usd": usd_limit,
                              "step_timeout_s": 30.0},
                   "used": {"experiments": experiments, "usd": usd, "tokens": tokens}},
        "wall_seconds": wall_seconds, "stop_reason": "budget", "updated_at": finished_at,
    }
    if abort_cause is not None:
        summary["abort_cause"] = abort_cause
    if environment is not None:  # provenance.environment, as benchmark.tasks.lock records it
        summary["provenance"] = {"environment": environment}
    if noise is not None:
        summary["noise"] = noise  # as TaskSpec.noise.record() writes it
    write_json_atomic(run_dir / "summary.json", summary)
    (run_dir / "config.yaml").write_text(json.dumps(config or {"agent": {"name": agent}, "seed": seed}))
    return run_dir


def build_tiny_roberta(out: Path, corpus: list[str]) -> Path:
    """A 2-layer, 32-wide RoBERTa with a BPE vocab trained on `corpus` (built offline: the Hub cannot be reached in tests)."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizer

    out.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus, vocab_size=400, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(out))
    # transformers 5: vocab=/merges= (vocab_file=/merges_file= are silently ignored)
    tok = RobertaTokenizer(vocab=str(out / "vocab.json"), merges=str(out / "merges.txt"), model_max_length=512)
    tok.save_pretrained(str(out))
    import torch

    torch.manual_seed(0)
    cfg = RobertaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=514, pad_token_id=tok.pad_token_id,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, type_vocab_size=1)
    RobertaModel(cfg).save_pretrained(str(out))
    return out


def golden_steps() -> list[Step]:
    """Lower is better, floor 20, target = best possible = 0; budget 6 experiments, 1 h of compute."""
    return [
        Step("0000", "baseline", "ok", 10.0, seconds=1),
        Step("0001", "draft", "ok", 8.0, ["0000"], seconds=2, files={"model.py": "a = 8\n"}, usd=0.1, tokens=1000),
        Step("0002", "draft", "buggy", None, ["0000"], seconds=1, files={"model.py": "a = ?\n"}, usd=0.1, tokens=1000),
        Step("0003", "debug", "ok", 4.0, ["0002"], seconds=1, files={"model.py": "a = 4\n"}, usd=0.05, tokens=500),
        Step("0004", "improve", "edit_failed", None, ["0003"], usd=0.05, tokens=500),
        Step("0005", "improve", "ok", 4.0, ["0003"], seconds=2, files={"model.py": "a = 4.0\n"}),
        Step("0006", "improve", "buggy", None, ["0005"], seconds=30, timed_out=True, exit_code=-9),
    ]
