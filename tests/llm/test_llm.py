"""LLMClient against litellm's mock_response and a loopback OpenAI-compatible stub: never the network."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before anything imports litellm

import pytest

from researchbench.benchmark.common.errors import BudgetExhausted, InfrastructureFailure, ScriptExhausted, UserError
from researchbench.benchmark.llm.accounting import LLMCall, Usage, cost_text
from researchbench.benchmark.llm.client import LLMClient
from researchbench.benchmark.llm.credentials import PROVIDER_KEYS, missing_credentials
from researchbench.benchmark.llm.config import LLMConfig

from llm_server import (
    BAD_REQUEST,
    EMPTY,
    HANG,
    MALFORMED,
    NO_CHOICES,
    PRICED_CALL_USD,
    PRICED_MODEL,
    RATE_LIMIT,
    SERVER_ERROR,
    UNAUTHORIZED,
    UNAVAILABLE,
    StubLLMServer,
    llm_server,  # noqa: F401 - pytest fixture
    ok,
)

REPO = Path(__file__).resolve().parents[2]
MSGS = [{"role": "user", "content": "propose an improvement"}]


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("STUB_KEY", "x")


def stub_cfg(server: StubLLMServer, **overrides: object) -> LLMConfig:
    base = dict(
        model="openai/test-model",
        api_base=server.url,
        api_key_env="STUB_KEY",
        max_retries=3,
        retry_backoff_s=0.01,
        timeout_s=5.0,
    )
    base.update(overrides)
    return LLMConfig(**base)  # type: ignore[arg-type]


# -- retries -------------------------------------------------------------------------------------


def test_rate_limit_then_success_counts_two_attempts(llm_server: StubLLMServer) -> None:
    llm_server.script(RATE_LIMIT, ok("hello"))
    call = LLMClient(stub_cfg(llm_server)).complete(MSGS)
    assert call.error == ""
    assert call.response == "hello"
    assert call.attempts == 2
    assert llm_server.hits == 2
    assert (call.prompt_tokens, call.completion_tokens) == (11, 7)


def test_request_carries_our_settings(llm_server: StubLLMServer) -> None:
    LLMClient(stub_cfg(llm_server, temperature=0.3, max_tokens=77)).complete(MSGS)
    body = llm_server.requests[0]
    assert body["model"] == "test-model"
    assert body["messages"] == MSGS
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 77


@pytest.mark.parametrize("failure", [SERVER_ERROR, UNAVAILABLE, RATE_LIMIT, MALFORMED, NO_CHOICES],
                         ids=lambda b: b.kind)
def test_endpoint_failing_every_retry_is_an_outage(llm_server: StubLLMServer, failure) -> None:
    llm_server.always(failure)
    client = LLMClient(stub_cfg(llm_server, max_retries=2))
    with pytest.raises(InfrastructureFailure) as raised:
        client.complete(MSGS)
    assert llm_server.hits == 3  # bounded: 1 + max_retries attempts
    assert raised.value.source == "llm" and raised.value.details["attempts"] == 3
    assert "failed all 3 attempt(s)" in raised.value.cause and llm_server.url in raised.value.cause
    assert client.usage.failed_calls == 1 and client.usage.calls == 1
    with pytest.raises(InfrastructureFailure):  # the endpoint is not asked again
        client.complete(MSGS)
    assert llm_server.hits == 3


def test_refused_credentials_are_an_outage_at_once(llm_server: StubLLMServer) -> None:
    llm_server.always(UNAUTHORIZED)
    with pytest.raises(InfrastructureFailure) as raised:
        LLMClient(stub_cfg(llm_server, max_retries=3)).complete(MSGS)
    assert llm_server.hits == 1
    assert "refused the credentials" in raised.value.cause and "$STUB_KEY" in raised.value.fix


@pytest.mark.parametrize("failure", [BAD_REQUEST, EMPTY], ids=lambda b: b.kind)
def test_answered_but_unusable_is_a_failed_call(llm_server: StubLLMServer, failure) -> None:
    """The endpoint answered: a rejected request (400, not retried) or an empty reply (retried) is
    the agent's outcome, returned as a failed call."""
    llm_server.always(failure)
    client = LLMClient(stub_cfg(llm_server, max_retries=2))
    call = client.complete(MSGS)  # must not raise
    assert llm_server.hits == call.attempts == (1 if failure is BAD_REQUEST else 3)
    assert call.error and call.response == ""
    assert client.unavailable is None and client.last_error == call.error


def test_hang_times_out_within_bound(llm_server: StubLLMServer) -> None:
    llm_server.always(HANG)
    client = LLMClient(stub_cfg(llm_server, timeout_s=0.5, max_retries=1, retry_backoff_s=0.01))
    import litellm  # noqa: F401  the client imports it on first use: up to 30 s on a loaded machine, not the bound's
    started = time.monotonic()
    with pytest.raises(InfrastructureFailure) as raised:
        client.complete(MSGS)
    elapsed = time.monotonic() - started
    assert llm_server.hits == 2
    assert "Timeout" in raised.value.details["error"]
    assert elapsed < llm_server.hang_s / 2, elapsed  # gave up at timeout_s, never waited out the server's hang


def test_empty_reply_then_success(llm_server: StubLLMServer) -> None:
    llm_server.script(EMPTY, ok("second try"))
    call = LLMClient(stub_cfg(llm_server)).complete(MSGS)
    assert (call.response, call.attempts, call.error) == ("second try", 2, "")


# -- accounting and caps -------------------------------------------------------------------------


def test_usd_cap_refuses_the_call_that_would_pass_it(llm_server: StubLLMServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUB_KEY", "x")
    llm_server.script(ok("a"), ok("b"))
    client = LLMClient(stub_cfg(llm_server, model=PRICED_MODEL, usd_cap=2.05 * PRICED_CALL_USD))
    first, second = client.complete(MSGS), client.complete(MSGS)
    assert (first.response, second.response) == ("a", "b")
    assert first.usd == pytest.approx(PRICED_CALL_USD) and not first.offline
    assert client.usage.usd == pytest.approx(2 * PRICED_CALL_USD)
    assert client.usage.reported_usd == client.usage.usd and not client.usage.offline  # real calls keep their cost
    with pytest.raises(BudgetExhausted):
        client.complete(MSGS)
    assert client.usage.calls == 2


def test_mock_and_scripted_replies_cost_nothing(tmp_path: Path) -> None:
    """litellm's mock prices the configured model, which was never called: an offline reply costs 0."""
    script = tmp_path / "replies.yaml"
    script.write_text("default: ['x', 'y']\n")
    for cfg in (LLMConfig(model="gpt-4o-mini", mock_responses=["a"]), LLMConfig(model="gpt-4o", script=str(script))):
        client = LLMClient(cfg)
        calls = [client.complete(MSGS) for _ in range(2)]
        assert [(c.usd, c.offline) for c in calls] == [(0.0, True)] * 2
        assert calls[0].prompt_tokens > 0  # tokens are still counted (token caps apply offline too)
        assert client.usage.offline and client.usage.reported_usd == 0.0 and client.usage.unknown_cost_calls == 0
    with pytest.raises(ScriptExhausted):  # the script is spent: the search ends, no provider asked
        client.complete(MSGS)
    assert client.usage.offline


def test_cost_text_says_why_a_cost_is_zero() -> None:
    assert cost_text(0.0123) == "$0.0123" and cost_text(None) == "$?"
    assert cost_text(0.5, offline=True) == "$0.0000 (offline LLM)"
    # a model litellm cannot price is not free: never a bare $0.0000 for it
    assert cost_text(0.0, unpriced_calls=3) == "$? (model not in litellm's price map)"
    assert cost_text(0.25, unpriced_calls=2) == "$0.2500 + 2 unpriced call(s)"


def test_token_cap() -> None:
    first = LLMClient(LLMConfig(model="gpt-4o-mini", mock_responses=["a"])).complete(MSGS)
    used = first.prompt_tokens + first.completion_tokens  # counted offline: the prompt and reply sent
    assert (first.model, first.prompt_tokens, first.completion_tokens) == ("mock", 11, 1)  # 3 words + the chat framing; "a"
    client = LLMClient(LLMConfig(model="gpt-4o-mini", mock_responses=["a"], token_cap=used + used // 2))
    client.complete(MSGS)
    with pytest.raises(BudgetExhausted):
        client.complete(MSGS)  # `used` spent + a typical `used` would pass the cap


def test_unknown_price_is_none_and_counted(llm_server: StubLLMServer) -> None:
    client = LLMClient(stub_cfg(llm_server, usd_cap=1.0))
    call = client.complete(MSGS)
    assert call.error == "" and call.usd is None
    assert client.usage.unknown_cost_calls == 1
    assert client.usage.usd == 0.0
    assert json.loads(json.dumps(call.to_dict()))["usd"] is None


def test_usage_round_trips_and_resume_continues_mock_cycle() -> None:
    cfg = LLMConfig(model="gpt-4o-mini", mock_responses=["a", "b", "c"])
    client = LLMClient(cfg)
    client.complete(MSGS)
    saved = json.loads(json.dumps(client.usage.to_dict()))
    restored = Usage.from_dict(saved)
    assert restored == client.usage
    resumed = LLMClient(cfg, usage=restored)
    assert resumed.complete(MSGS).response == "b"
    assert resumed.usage.calls == 2


def test_llm_call_round_trips() -> None:
    call = LLMClient(LLMConfig(mock_responses=["hi"])).complete(MSGS)
    raw = json.loads(json.dumps(call.to_dict()))
    assert LLMCall.from_dict(raw) == call
    assert raw["messages"] == MSGS


# -- record / replay -----------------------------------------------------------------------------


def test_record_then_replay_offline_is_byte_identical(tmp_path: Path) -> None:
    texts = ["first ```py\nx = 1\n```\n", "second: ünïcödé \u2028 and \\n escapes\r\n"]
    prompts = [[{"role": "user", "content": "one"}], [{"role": "user", "content": "two"}]]
    with StubLLMServer() as server:
        server.script(*(ok(t) for t in texts))
        cfg = stub_cfg(server, cache="record", cache_dir=str(tmp_path))
        recorded = [LLMClient(cfg).complete(p) for p in prompts]
        hits = server.hits
    assert [c.response for c in recorded] == texts
    assert hits == 2
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".json"]  # no tmp files left

    replay_cfg = LLMConfig(**{**cfg.__dict__, "cache": "replay"})
    replayer = LLMClient(replay_cfg)
    replayed = [replayer.complete(p) for p in prompts]
    assert [c.response.encode() for c in replayed] == [t.encode() for t in texts]
    assert all(c.cached and c.attempts == 0 and c.error == "" for c in replayed)
    assert [(c.prompt_tokens, c.completion_tokens, c.usd) for c in replayed] == [(11, 7, None)] * 2
    assert server.hits == hits


def test_replay_miss_is_an_error_record(tmp_path: Path) -> None:
    client = LLMClient(LLMConfig(model="openai/nowhere", cache="replay", cache_dir=str(tmp_path)))
    call = client.complete(MSGS)
    assert call.error.startswith("replay cache miss")
    assert client.usage.failed_calls == 1


def test_replay_follows_the_recorded_run_by_position_when_a_prompt_differs(tmp_path: Path) -> None:
    """Prompts that show measured times never repeat exactly; a replay serves the reply recorded at the
    same point (operator and its call number) and says so, and misses where the recording has none."""
    base = dict(model="gpt-4o-mini", mock_responses=["draft one", "analysis one", "draft two"],
                cache_dir=str(tmp_path))
    recorder = LLMClient(LLMConfig(**base, cache="record"))
    for text, operator in (("draft, baseline took 3.1 s", "draft"), ("analyze 3.1 s", "analyze"),
                           ("draft again, 3.1 s", "draft")):
        recorder.complete([{"role": "user", "content": text}], operator)

    replayer = LLMClient(LLMConfig(**base, cache="replay"))
    exact = replayer.complete([{"role": "user", "content": "draft, baseline took 3.1 s"}], "draft")
    drifted = replayer.complete([{"role": "user", "content": "draft again, 2.9 s"}], "draft")
    analysis = replayer.complete([{"role": "user", "content": "analyze 2.9 s"}], "analyze")
    beyond = replayer.complete([{"role": "user", "content": "a third draft"}], "draft")
    assert (exact.response, exact.replayed_by_position) == ("draft one", False)
    assert (drifted.response, drifted.replayed_by_position, drifted.cached) == ("draft two", True, True)
    assert analysis.response == "analysis one" and analysis.replayed_by_position
    assert beyond.error.startswith("replay cache miss") and "'draft' call #3" in beyond.error

    # a folder holding two different recordings cannot say which to follow: a miss, never a guess
    LLMClient(LLMConfig(**{**base, "mock_responses": ["other draft"]}, cache="record")).complete(
        [{"role": "user", "content": "another run's first draft"}], "draft")
    ambiguous = LLMClient(LLMConfig(**base, cache="replay")).complete([{"role": "user", "content": "x"}], "draft")
    assert ambiguous.error.startswith("replay cache miss")


def test_auto_mode_calls_once_then_hits(llm_server: StubLLMServer, tmp_path: Path) -> None:
    llm_server.script(ok("cached answer"))
    client = LLMClient(stub_cfg(llm_server, cache="auto", cache_dir=str(tmp_path)))
    first, second = client.complete(MSGS), client.complete(MSGS)
    assert llm_server.hits == 1
    assert (first.cached, second.cached) == (False, True)
    assert second.response == first.response == "cached answer"
    other = client.complete([{"role": "user", "content": "different"}])
    assert llm_server.hits == 2 and not other.cached


def test_cache_hits_count_nominally_against_caps(tmp_path: Path, llm_server: StubLLMServer,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay stops where the recorded run stopped; spent_usd and the reported cost show nothing was paid."""
    monkeypatch.setenv("STUB_KEY", "x")
    base = dict(model=PRICED_MODEL, cache_dir=str(tmp_path))
    recorder = LLMClient(stub_cfg(llm_server, **base, cache="record"))
    recorder.complete([{"role": "user", "content": "1"}])
    recorder.complete([{"role": "user", "content": "2"}])
    replayer = LLMClient(stub_cfg(llm_server, **base, cache="replay", usd_cap=2.05 * PRICED_CALL_USD))
    calls = [replayer.complete([{"role": "user", "content": str(i)}]) for i in (1, 2)]
    assert llm_server.hits == 2  # only the recorder's
    assert [c.usd for c in calls] == [pytest.approx(PRICED_CALL_USD)] * 2
    assert replayer.usage.usd == pytest.approx(2 * PRICED_CALL_USD)
    assert replayer.usage.spent_usd == pytest.approx(0.0)
    assert replayer.usage.offline and replayer.usage.reported_usd == 0.0
    assert replayer.usage.cached_calls == 2
    with pytest.raises(BudgetExhausted):
        replayer.complete([{"role": "user", "content": "3"}])


def test_bad_cache_settings_are_user_errors() -> None:
    with pytest.raises(UserError, match="cache_dir"):
        LLMClient(LLMConfig(cache="record"))
    with pytest.raises(UserError, match="replay"):
        LLMClient(LLMConfig(cache="sometimes", cache_dir="x"))


# -- credentials and import hygiene --------------------------------------------------------------


def test_missing_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    line = missing_credentials(LLMConfig(model="gpt-4o-mini"))
    assert line is not None and "OPENAI_API_KEY" in line and "agent=optuna" in line
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert missing_credentials(LLMConfig(model="gpt-4o-mini")) is None

    monkeypatch.delenv("MY_GATEWAY_KEY", raising=False)
    assert "MY_GATEWAY_KEY" in (missing_credentials(LLMConfig(api_key_env="MY_GATEWAY_KEY")) or "")
    assert missing_credentials(LLMConfig(mock_responses=["x"])) is None
    assert missing_credentials(LLMConfig(model="openai/qwen", api_base="http://localhost:8000/v1")) is None
    assert missing_credentials(LLMConfig(model="ollama/llama3.1")) is None

    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    assert "GEMINI_API_KEY" in (missing_credentials(LLMConfig(model="gemini/gemini-2.5-flash")) or "")
    monkeypatch.setenv("GOOGLE_API_KEY", "g-test")  # litellm takes either of gemini's two variables
    assert missing_credentials(LLMConfig(model="gemini/gemini-2.5-flash")) is None


@pytest.mark.parametrize("provider", sorted(PROVIDER_KEYS))
def test_key_table_agrees_with_litellm(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The light table answers without litellm; it must name the variables litellm itself asks for."""
    from researchbench.benchmark.llm.client import import_litellm

    names, _ = PROVIDER_KEYS[provider]
    for name in names:
        monkeypatch.delenv(name, raising=False)
    check = import_litellm().validate_environment(model=f"{provider}/some-model")
    assert sorted(check["missing_keys"]) == sorted(names)


def test_provider_outside_the_table_asks_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AZURE_API_KEY", "AZURE_API_BASE", "AZURE_API_VERSION"):
        monkeypatch.delenv(name, raising=False)
    assert "AZURE_API_KEY" in (missing_credentials(LLMConfig(model="azure/my-deployment")) or "")
    assert "names no provider" in (missing_credentials(LLMConfig(model="no-such-family-xyz")) or "")


def test_import_does_not_load_litellm() -> None:
    code = "import sys, benchmark.llm.client; assert 'litellm' not in sys.modules, 'litellm imported'"
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# -- per-operator settings, cut-off and reasoning replies, scripts, threads ----------------------


def test_operator_overrides_pick_model_and_limits(llm_server: StubLLMServer) -> None:
    from researchbench.benchmark.llm.config import OperatorLLMConfig

    cfg = stub_cfg(llm_server, operators={"analyze": OperatorLLMConfig(model="openai/cheap-model", max_tokens=50,
                                                                      temperature=0.9)})
    client = LLMClient(cfg)
    review = client.complete(MSGS, operator="analyze")
    edit = client.complete(MSGS, operator="draft")
    assert [r["model"] for r in llm_server.requests] == ["cheap-model", "test-model"]
    assert (llm_server.requests[0]["max_tokens"], llm_server.requests[0]["temperature"]) == (50, 0.9)
    assert (review.model, review.operator, edit.model, edit.operator) == ("openai/cheap-model", "analyze",
                                                                          "openai/test-model", "draft")
    assert client.usage.operator_calls == {"analyze": 1, "draft": 1}
    assert review.prompt_chars == len(MSGS[0]["content"])


def _fake_completion(monkeypatch: pytest.MonkeyPatch, content: str, finish: str, reasoning: int) -> list[dict]:
    import litellm

    seen: list[dict] = []

    def completion(**kwargs):
        seen.append(kwargs)
        return litellm.ModelResponse(
            model="gpt-4o-mini",
            choices=[{"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": content}}],
            usage={"prompt_tokens": 100, "completion_tokens": 300, "total_tokens": 400,
                   "completion_tokens_details": {"reasoning_tokens": reasoning}})

    monkeypatch.setattr(litellm, "completion", completion)
    return seen


def test_reply_cut_by_the_token_limit_is_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_completion(monkeypatch, "Plan: rewrite.\n### FILE: model.py\n```python\ndef f(", "length", 0)
    call = LLMClient(LLMConfig(model="gpt-4o-mini")).complete(MSGS)
    assert call.ok and call.truncated and call.response.endswith("def f(")


def test_reasoning_that_eats_the_budget_is_reported_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _fake_completion(monkeypatch, "", "length", 300)
    client = LLMClient(LLMConfig(model="gpt-4o-mini", max_tokens=300, max_retries=3))
    call = client.complete(MSGS)
    assert len(seen) == 1 and call.attempts == 1
    assert "reasoning tokens" in call.error and "max_tokens=300" in call.error
    assert (call.reasoning_tokens, call.completion_tokens) == (300, 300) and call.usd and call.usd > 0
    assert client.usage.failed_calls == 1 and client.usage.reasoning_tokens == 300 and client.usage.usd == call.usd


def test_reasoning_tokens_are_counted_on_answered_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_completion(monkeypatch, "Plan: ok", "stop", 120)
    client = LLMClient(LLMConfig(model="gpt-4o-mini"))
    call = client.complete(MSGS)
    assert (call.reasoning_tokens, call.finish_reason) == (120, "stop") and client.usage.reasoning_tokens == 120


def test_script_folder_serves_replies_per_operator_and_resumes(tmp_path: Path) -> None:
    (tmp_path / "analyze").mkdir()
    (tmp_path / "01.md").write_text("first edit")
    (tmp_path / "02.md").write_text("second edit")
    (tmp_path / "analyze" / "a.txt").write_text("a review")
    client = LLMClient(LLMConfig(script=str(tmp_path)))
    assert client.complete(MSGS, operator="draft").response == "first edit"
    assert client.complete(MSGS, operator="analyze").response == "a review"
    with pytest.raises(ScriptExhausted, match=r"^scripted LLM: script exhausted after 2 replies; stopping "
                                              r"\(no reply left for operator 'analyze'"):
        client.complete(MSGS, operator="analyze")
    with pytest.raises(ScriptExhausted):  # for every operator from then on: the search ends
        client.complete(MSGS, operator="improve")
    resumed = LLMClient(LLMConfig(script=str(tmp_path)), Usage.from_dict(client.usage.to_dict()))
    assert resumed.complete(MSGS, operator="improve").response == "second edit"  # continues the default list


def test_script_files_jsonl_and_yaml(tmp_path: Path) -> None:
    jsonl = tmp_path / "replies.jsonl"
    jsonl.write_text('"plain"\n{"reply": "for debug", "operator": "debug"}\n')
    client = LLMClient(LLMConfig(script=str(jsonl)))
    assert client.complete(MSGS, operator="debug").response == "for debug"
    assert client.complete(MSGS, operator="draft").response == "plain"
    yaml_file = tmp_path / "replies.yaml"
    yaml_file.write_text("- one\n- two\n")
    client = LLMClient(LLMConfig(script=str(yaml_file)))
    assert [client.complete(MSGS).response for _ in range(2)] == ["one", "two"]
    assert missing_credentials(LLMConfig(model="gpt-4o", script=str(yaml_file))) is None
    assert "does not exist" in missing_credentials(LLMConfig(script=str(tmp_path / "nope")))


@pytest.mark.parametrize("content, problem", [(None, "no such file"), ("{a: 1}", "expected a list"),
                                              ("[]", "holds no replies"), ('{"x": ', "unreadable")])
def test_bad_scripts_are_one_line_user_errors(tmp_path: Path, content, problem) -> None:
    path = tmp_path / "script.yaml"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UserError, match=problem):
        LLMClient(LLMConfig(script=str(path)))


def test_usage_and_scripted_replies_are_thread_safe(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    usage = Usage()
    call = LLMCall(model="m", prompt_tokens=3, completion_tokens=2, usd=0.5, operator="draft")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: usage.add(call), range(4000)))
    assert (usage.calls, usage.prompt_tokens, usage.operator_calls) == (4000, 12000, {"draft": 4000})
    assert usage.usd == pytest.approx(2000.0)
    script = tmp_path / "replies.yaml"
    script.write_text(json.dumps([f"reply {i}" for i in range(24)]))
    client = LLMClient(LLMConfig(script=str(script)))
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda _: client.complete(MSGS, operator="improve").response, range(24)))
    assert sorted(replies) == sorted(f"reply {i}" for i in range(24))  # each served exactly once


def test_gzipped_cache_entries_read_like_plain_ones(tmp_path: Path) -> None:
    """Recordings kept in the repository store their replies gzipped (examples/recorded/**/cache/*.json.gz)."""
    import gzip

    from researchbench.benchmark.llm.cache import ResponseCache

    cache = ResponseCache(tmp_path)
    cache.put("plain", {"response": "a", "operator": "draft", "position": 0})
    entry = {"response": "b", "operator": "improve", "position": 3}
    (tmp_path / "zipped.json.gz").write_bytes(gzip.compress(json.dumps(entry).encode()))
    (tmp_path / "broken.json.gz").write_bytes(b"not gzip")
    assert cache.get("plain")["response"] == "a" and cache.get("zipped") == entry
    assert cache.get("broken") is None and cache.get("absent") is None  # unreadable: ignored with a warning
    assert cache.at_position("improve", 3) == entry and cache.at_position("draft", 0)["response"] == "a"
