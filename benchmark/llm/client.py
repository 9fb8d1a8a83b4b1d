"""The one small LLM client: litellm behind bounded retries, timeouts, accounting, caps and a cache.

Why this shape:
- litellm is imported inside functions, after ``LITELLM_LOCAL_MODEL_COST_MAP=True`` is defaulted, so
  importing this module (and everything that imports its config) costs nothing and opens no socket.
- litellm and the OpenAI SDK both retry on their own; we switch both off (``num_retries=0``,
  ``max_retries=0``) so tenacity's loop here is the only one and attempt counts are exact.
- A failure of the request or the reply (400, an empty reply, thinking to the limit) never raises:
  the caller gets an ``LLMCall`` with ``error`` set and records a failed step, the agent's outcome. A
  failure of the endpoint (unreachable, timing out, 5xx or 429 through every retry; credentials,
  model or route refused, at once) is nobody's result: it raises ``InfrastructureFailure`` and every
  later call raises it again at once, so the run is aborted and resumed, never scored
  (``endpoint_failure`` draws the line). A budget cap raises ``BudgetExhausted``: the run stops
  cleanly.
- Budgets count *nominal* spend: a cache hit adds its recorded tokens and cost to ``Usage`` like a
  live call, so an agent's budget does not depend on how warm the cache is, and a replayed run stops
  at exactly the step where the recorded run stopped. ``Usage.cached_usd`` is the part of ``usd`` that
  was served from the cache, so ``Usage.spent_usd`` is the money that actually left the account.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from typing import Any, Optional

from researchbench.benchmark.common.domains import out_of_range
from researchbench.benchmark.common.errors import BudgetExhausted, InfrastructureFailure, ScriptExhausted, UserError
from researchbench.benchmark.llm.accounting import LLMCall, Usage
from researchbench.benchmark.llm.cache import ResponseCache, cache_key
from researchbench.benchmark.llm.config import LLMConfig, as_config, script_path

OFFLINE_MOCK, OFFLINE_SCRIPTED = "mock", "scripted"  # the model name offline replies are recorded under
MAX_BACKOFF_S = 60.0  # cap on one exponential backoff wait
MAX_ERROR_CHARS = 2000  # provider error texts can be whole HTML pages
NO_KEY_PLACEHOLDER = "no-key"  # sent to key-less custom endpoints: the OpenAI SDK refuses to send none

_log = logging.getLogger(__name__)
_litellm_lock = threading.Lock()


class EmptyReply(Exception):
    """The provider answered 200 but with no usable text: retried like a transient failure."""


class ThoughtToTheLimit(Exception):
    """An empty reply because reasoning used the whole token budget: retrying the same request cannot
    help (it would think just as long), so it is reported at once, with the tokens it cost."""

    def __init__(self, message: str, response: Any) -> None:
        super().__init__(message)
        self.response = response


def import_litellm() -> Any:
    """Import litellm offline and quiet: no price-map download, no banners, no debug chatter."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    import litellm

    with _litellm_lock:
        litellm.suppress_debug_info = True
        litellm.set_verbose = False
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
            logging.getLogger(name).setLevel(logging.ERROR)
    return litellm


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: rate limits, 5xx, connection drops, timeouts, empty or malformed replies."""
    import openai

    if isinstance(exc, ThoughtToTheLimit):
        return False
    if isinstance(exc, EmptyReply):
        return True
    if "Missing credentials" in str(exc):  # litellm wraps a missing key as a 500; retrying cannot help
        return False
    permanent = (
        openai.AuthenticationError,
        openai.PermissionDeniedError,
        openai.BadRequestError,
        openai.NotFoundError,
        openai.UnprocessableEntityError,
    )
    if isinstance(exc, permanent):
        return False
    if isinstance(exc, (openai.RateLimitError, openai.APIConnectionError, openai.InternalServerError)):
        return True  # APIConnectionError covers APITimeoutError, hence litellm.Timeout
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status in (408, 409, 429) or status >= 500)


def endpoint_failure(exc: BaseException) -> str:
    """Whose failure a call's last exception was: the endpoint's ("auth": credentials refused,
    "not_found": model or route unknown, "down": unreachable, timing out, 5xx or rate limited), or
    "" when the endpoint answered and the request or the reply was the problem (400, 422, an empty
    reply, reasoning to the token limit): the agent's outcome, recorded as a failed call."""
    import openai

    if isinstance(exc, (ThoughtToTheLimit, EmptyReply)):
        return ""
    if "Missing credentials" in str(exc) or isinstance(exc, (openai.AuthenticationError,
                                                              openai.PermissionDeniedError)):
        return "auth"
    if isinstance(exc, openai.NotFoundError):
        return "not_found"
    return "down" if is_transient(exc) else ""


def _reply_text(response: Any, max_tokens: int) -> tuple[str, str]:
    """(text, finish_reason); EmptyReply when there is no text, ThoughtToTheLimit when reasoning ate
    the whole budget (a malformed body raises earlier)."""
    choices = getattr(response, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    text = getattr(message, "content", None) if message is not None else None
    finish = str(getattr(choices[0], "finish_reason", "") or "") if choices else ""
    if not isinstance(text, str) or not text.strip():
        if finish == "length":
            reasoning = _usage_numbers(response)[2]
            raise ThoughtToTheLimit(
                f"empty reply: the model stopped at max_tokens={max_tokens} ({reasoning} reasoning tokens) "
                "before writing an answer; raise llm.max_tokens (or llm.operators.<operator>.max_tokens)", response)
        raise EmptyReply("provider returned an empty reply")
    return text, finish


def _usage_numbers(response: Any) -> tuple[int, int, int]:
    """(prompt, completion, reasoning) tokens; reasoning is part of completion, as providers bill it."""
    usage = getattr(response, "usage", None)
    details = getattr(usage, "completion_tokens_details", None)
    reasoning = getattr(details, "reasoning_tokens", 0) if details is not None else 0
    return (int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0),
            int(reasoning or 0))


def _known_cost(litellm: Any, model: str, response: Any) -> Optional[float]:
    """Cost in USD, or None when litellm cannot price the model.

    litellm reports 0.0 for some models it does not know (e.g. most ``openrouter/...`` names); a zero
    is trusted only when the model is in the price map (local models such as ``ollama/...`` are).
    """
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    if cost is None:
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:
            return None
    if cost is None:
        return None
    cost = float(cost)
    if cost > 0:
        return cost
    bare = model.split("/", 1)[-1]
    return cost if model in litellm.model_cost or bare in litellm.model_cost else None


class LLMClient:
    """``complete(messages, operator) -> LLMCall``; shares ``usage`` with the engine, which checkpoints it.

    Pass a restored ``Usage.from_dict(...)`` on resume so caps, the mock cycle and the script position
    continue where the run left off. ``complete`` may be called from several threads at once.
    """

    def __init__(self, cfg: LLMConfig | Any, usage: Optional[Usage] = None) -> None:
        self.cfg = as_config(cfg)
        self.usage = usage if usage is not None else Usage()
        problem = out_of_range(self.cfg, "llm.")  # the run checked them; a client built by hand is checked here
        if problem:
            raise UserError(problem)
        if self.cfg.cache != "off" and not self.cfg.cache_dir:
            raise UserError(f"llm.cache={self.cfg.cache} needs llm.cache_dir (a folder for recorded replies)")
        if self.cfg.mock_responses is not None and not self.cfg.mock_responses:
            raise UserError("llm.mock_responses is an empty list; give at least one reply or null")
        self._script = load_script(self.cfg.script) if self.cfg.script else None
        self._cache = ResponseCache(self.cfg.cache_dir) if self.cfg.cache != "off" else None
        self._lock = threading.Lock()
        self._served: dict[str, int] = {}  # scripted/mock replies handed out, per queue
        self._exhausted = ""  # why the script ran out, once it has
        self.unavailable: Optional[InfrastructureFailure] = None  # set by the first endpoint failure
        self.last_error = ""  # of the latest failed call, for the run's verdict when none succeeded

    def complete(self, messages: list[dict], operator: str = "") -> LLMCall:
        """One chat completion with ``operator``'s settings. A failed request or reply is returned as
        a call with ``error``; raises InfrastructureFailure when the endpoint failed (then on every
        later call too) and BudgetExhausted at a cap."""
        self.raise_if_unavailable()
        messages = [dict(m) for m in messages]
        cfg = self.cfg.for_operator(operator)
        started = time.monotonic()
        self._check_budget()  # before the cache too: budgets are nominal, so replays stop where runs did
        key = cache_key(cfg, messages) if self._cache else ""
        position = self.usage.operator_calls.get(operator, 0)  # this operator's calls before this one
        if self._cache and self.cfg.cache in ("replay", "auto"):
            entry = self._cache.get(key)
            if entry is not None:
                return self._record(self._from_cache(cfg, entry, messages, time.monotonic() - started), operator)
            if self.cfg.cache == "replay":
                return self._record(self._replay_by_position(cfg, key, messages, operator, position, started),
                                    operator)
        scripted = self._scripted_reply(operator)
        call, failure = self._call_provider(cfg, messages, started, scripted)
        if scripted is not None:  # litellm's mock priced a model nobody called: it cost nothing
            call.usd, call.offline = 0.0, True
            if call.ok:
                self._count_offline(call, cfg)
        if self._cache and call.ok:
            self._cache.put(key, {**self._cache_entry(cfg, call), "operator": operator, "position": position})
        self._record(call, operator)
        if failure:
            self.unavailable = _outage(cfg, call, failure)
            self.raise_if_unavailable()
        return call

    def raise_if_unavailable(self) -> None:
        """Raise the endpoint failure this client met, if any."""
        if self.unavailable is not None:
            raise self.unavailable.renewed()

    # -- budget -----------------------------------------------------------------------------------

    def _check_budget(self) -> None:
        """Refuse a call once spend, plus what one typical call has cost so far, would pass a cap."""
        u, cfg = self.usage, self.cfg
        if cfg.usd_cap is not None:
            projected = u.usd + u.mean_call_usd()
            if u.usd >= cfg.usd_cap or projected > cfg.usd_cap:
                raise BudgetExhausted(
                    f"LLM USD cap reached: ${u.usd:.6g} used of ${cfg.usd_cap:.6g} "
                    f"(a typical call costs ${u.mean_call_usd():.6g})"
                )
        if cfg.token_cap is not None:
            projected_tokens = u.total_tokens + u.mean_call_tokens()
            if u.total_tokens >= cfg.token_cap or projected_tokens > cfg.token_cap:
                raise BudgetExhausted(
                    f"LLM token cap reached: {u.total_tokens} used of {cfg.token_cap} "
                    f"(a typical call uses {u.mean_call_tokens():.0f})"
                )

    def _record(self, call: LLMCall, operator: str) -> LLMCall:
        call.operator = operator
        call.prompt_chars = sum(len(str(m.get("content") or "")) for m in call.messages)
        self.usage.add(call)
        if call.error:
            self.last_error = call.error
        return call

    # -- offline replies --------------------------------------------------------------------------

    def _count_offline(self, call: LLMCall, cfg: LLMConfig) -> None:
        """Record an offline reply as what it was: the tokens actually sent and received, counted offline by
        litellm's token counter with the configured model's tokenizer (litellm's mock reports a constant
        10 + 20), under the offline model's name ("scripted" or "mock"), not a model nobody called."""
        litellm = import_litellm()
        try:
            call.prompt_tokens = int(litellm.token_counter(model=cfg.model, messages=call.messages))
            call.completion_tokens = int(litellm.token_counter(model=cfg.model, text=call.response,
                                                               count_response_tokens=True))
        except Exception:  # no tokenizer for this model: about 4 characters a token (docs/agents.md)
            call.prompt_tokens = -(-sum(len(str(m.get("content") or "")) for m in call.messages) // 4)
            call.completion_tokens = -(-len(call.response) // 4)
        call.reasoning_tokens = 0
        call.model = OFFLINE_SCRIPTED if self._script is not None else OFFLINE_MOCK

    def _scripted_reply(self, operator: str) -> str | None:
        """The next mock or scripted reply (None for a live call). Positions are claimed under a lock
        and start from the checkpointed usage, so threads never share a reply and resume continues.
        A script that runs out for an operator raises ScriptExhausted, then and at every later call."""
        if self._script is None and not self.cfg.mock_responses:
            return None
        with self._lock:
            if self._exhausted:
                raise ScriptExhausted(self._exhausted)
            if self._script is None:
                queue, replies = "*", self.cfg.mock_responses or []
                start = self.usage.calls
            else:
                queue = operator if operator in self._script else "default"
                replies = self._script.get(queue, [])
                start = sum(n for op, n in self.usage.operator_calls.items()
                            if (op if op in self._script else "default") == queue)
            index = self._served.setdefault(queue, start)
            if self._script is not None and index >= len(replies):
                self._exhausted = (f"scripted LLM: script exhausted after {self.usage.calls} replies; stopping "
                                   f"(no reply left for operator '{operator or queue}': its '{queue}' list holds "
                                   f"{len(replies)})")
                raise ScriptExhausted(self._exhausted)
            self._served[queue] = index + 1
        return replies[index % len(replies)]

    # -- provider ---------------------------------------------------------------------------------

    def _request_kwargs(self, cfg: LLMConfig, messages: list[dict], mock: Optional[str]) -> dict[str, Any]:
        kwargs: dict[str, Any] = dict(cfg.extra)
        kwargs.update(
            model=cfg.model,
            messages=messages,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            timeout=cfg.timeout_s,
            num_retries=0,  # litellm's own retry wrapper: off
            max_retries=0,  # the OpenAI SDK's retries: off
            drop_params=True,  # e.g. reasoning models that reject temperature: drop, don't fail the run
        )
        if cfg.api_base:
            kwargs["api_base"] = cfg.api_base
        key = _resolve_key(cfg)
        if key is not None:
            kwargs["api_key"] = key
        if mock is not None:
            kwargs["mock_response"] = mock
        return kwargs

    def _call_provider(self, cfg: LLMConfig, messages: list[dict], started: float,
                       mock: Optional[str]) -> tuple[LLMCall, str]:
        """The call, and ``endpoint_failure`` of its last exception ("" when answered)."""
        from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

        litellm = import_litellm()
        kwargs = self._request_kwargs(cfg, messages, mock)
        attempts = 0
        retrying = Retrying(
            stop=stop_after_attempt(cfg.max_retries + 1),
            wait=wait_exponential(multiplier=cfg.retry_backoff_s, max=MAX_BACKOFF_S),
            retry=retry_if_exception(is_transient),
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    attempts += 1
                    response = litellm.completion(**kwargs)
                    text, finish = _reply_text(response, cfg.max_tokens)
        except Exception as exc:  # noqa: BLE001 - any provider failure becomes a recorded failed call
            error = f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]
            call = LLMCall(model=cfg.model, latency_s=time.monotonic() - started, attempts=attempts, error=error,
                           messages=messages)
            if isinstance(exc, ThoughtToTheLimit):  # the thinking was billed: count it
                call.prompt_tokens, call.completion_tokens, call.reasoning_tokens = _usage_numbers(exc.response)
                call.usd, call.finish_reason = _known_cost(litellm, cfg.model, exc.response), "length"
            return call, endpoint_failure(exc)
        prompt_tokens, completion_tokens, reasoning_tokens = _usage_numbers(response)
        return LLMCall(
            model=cfg.model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            reasoning_tokens=reasoning_tokens,
            finish_reason=finish,
            usd=_known_cost(litellm, cfg.model, response),
            latency_s=time.monotonic() - started,
            attempts=attempts,
            response=text,
            messages=messages,
        ), ""

    # -- cache ------------------------------------------------------------------------------------

    def _cache_entry(self, cfg: LLMConfig, call: LLMCall) -> dict[str, Any]:
        return {
            "model": call.model,
            "api_base": cfg.api_base,
            "messages": call.messages,
            "response": call.response,
            "prompt_tokens": call.prompt_tokens,
            "completion_tokens": call.completion_tokens,
            "reasoning_tokens": call.reasoning_tokens,
            "finish_reason": call.finish_reason,
            "usd": call.usd,
            "latency_s": call.latency_s,
            "recorded_at": time.time(),
        }

    def _replay_by_position(self, cfg: LLMConfig, key: str, messages: list[dict], operator: str, position: int,
                            started: float) -> LLMCall:
        """A prompt the recording does not hold word for word: replay the reply recorded at the same
        point of the run (``operator``'s call number ``position``), said in the log, since a prompt
        that shows measured times never repeats exactly. A miss when the folder has no such call."""
        entry = self._cache.at_position(operator, position) if self._cache else None
        if entry is None:
            miss = (f"replay cache miss (key {key[:16]}; no recorded '{operator}' call #{position + 1}) "
                    f"in {self.cfg.cache_dir}")
            return LLMCall(model=cfg.model, error=miss, messages=messages, offline=True)
        _log.warning("replay: the prompt of '%s' call #%d differs from the recording (e.g. measured times); "
                     "replaying the reply recorded at that point", operator, position + 1)
        call = self._from_cache(cfg, entry, messages, time.monotonic() - started)
        call.replayed_by_position = True
        return call

    def _from_cache(self, cfg: LLMConfig, entry: dict[str, Any], messages: list[dict], latency_s: float) -> LLMCall:
        usd = entry.get("usd")
        return LLMCall(
            model=cfg.model,
            prompt_tokens=int(entry.get("prompt_tokens") or 0),
            completion_tokens=int(entry.get("completion_tokens") or 0),
            reasoning_tokens=int(entry.get("reasoning_tokens") or 0),
            finish_reason=str(entry.get("finish_reason") or ""),
            usd=float(usd) if usd is not None else None,
            latency_s=latency_s,
            attempts=0,
            cached=True,
            response=entry["response"],
            messages=messages,
        )


def load_script(path: str | os.PathLike[str]) -> dict[str, list[str]]:
    """Scripted replies for ``llm.script``, as {operator or "default": [reply, ...]}.

    - a folder: one reply per file, in sorted file-name order (hidden files skipped); a subfolder
      named after an operator (``draft/``, ``analyze/``, ...) holds that operator's replies;
    - ``.jsonl``: one JSON value per line, a string or ``{"reply": ..., "operator": ...}``;
    - ``.yaml``/``.yml``/``.json``: a list of replies, or a mapping operator -> list of replies.
    An operator without its own list takes replies from ``default``, in the order calls are made.
    """
    root = script_path(path)
    if not root.exists():
        raise UserError(f"llm.script={path}: no such file or folder")
    script: dict[str, list[str]] = {}
    try:
        if root.is_dir():
            for entry in sorted(root.iterdir()):
                if entry.name.startswith("."):
                    continue
                if entry.is_dir():
                    script[entry.name] = [f.read_text() for f in sorted(entry.iterdir())
                                          if f.is_file() and not f.name.startswith(".")]
                else:
                    script.setdefault("default", []).append(entry.read_text())
        elif root.suffix == ".jsonl":
            for number, line in enumerate(root.read_text().splitlines(), 1):
                if not line.strip():
                    continue
                item = json.loads(line)
                if isinstance(item, dict):
                    script.setdefault(item.get("operator") or "default", []).append(item["reply"])
                elif isinstance(item, str):
                    script.setdefault("default", []).append(item)
                else:
                    raise ValueError(f"line {number} is neither a string nor an object with 'reply'")
        elif root.suffix in (".yaml", ".yml", ".json"):
            import yaml

            raw = yaml.safe_load(root.read_text())
            raw = {"default": raw} if isinstance(raw, list) else raw
            if not isinstance(raw, dict) or not all(isinstance(v, list) for v in raw.values()):
                raise ValueError("expected a list of replies or a mapping operator -> list of replies")
            script = {str(k): [str(r) for r in v] for k, v in raw.items()}
        else:
            raise ValueError("expected a folder, a .jsonl, .yaml, .yml or .json file")
    except (ValueError, KeyError, OSError) as exc:
        raise UserError(f"llm.script={path}: {exc} (see docs/agents.md, 'Testing offline')") from None
    except Exception as exc:  # yaml.YAMLError and friends
        raise UserError(f"llm.script={path}: unreadable ({type(exc).__name__}); see docs/agents.md") from None
    if not any(script.values()):
        raise UserError(f"llm.script={path} holds no replies")
    return script


def _outage(cfg: LLMConfig, call: LLMCall, failure: str) -> InfrastructureFailure:
    """The abort an endpoint failure means, in one line of cause and one of fix."""
    where = f"{cfg.model}" + (f" at {cfg.api_base}" if cfg.api_base else "")
    error = (call.error.strip().splitlines() or [""])[0][:200]
    if failure == "auth":
        key = f"${cfg.api_key_env}" if cfg.api_key_env else "the provider's key variable"
        cause = f"the LLM endpoint refused the credentials for {where} ({error})"
        fix = f"check the key in {key} and its access to the model"
    elif failure == "not_found":
        cause = f"the LLM endpoint does not know {where} ({error})"
        fix = "check llm.model and llm.api_base (a changed setting starts a new run)"
    else:
        cause = f"the LLM endpoint {where} failed all {call.attempts} attempt(s) of a call ({error})"
        fix = "check that the endpoint is up and reachable, or raise llm.max_retries to wait longer"
    return InfrastructureFailure(cause, fix, "llm", model=cfg.model, api_base=cfg.api_base, kind=failure,
                                 attempts=call.attempts, error=call.error)


def _resolve_key(cfg: LLMConfig) -> Optional[str]:
    """The key to pass explicitly, or None to let litellm read the provider's default variable."""
    if cfg.api_key_env:
        return os.environ.get(cfg.api_key_env) or None
    if cfg.api_base and not (cfg.mock_responses or cfg.script):
        return NO_KEY_PLACEHOLDER  # custom endpoint without api_key_env: it needs no key
    return None
