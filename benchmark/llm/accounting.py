"""What LLM calls cost: the record of one call and a run's running totals, both checkpointed."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, Mapping, Optional


@dataclass
class LLMCall:
    """The record of one ``complete()``: JSON-serialisable, stored with the node that made it.

    ``usd`` is None when the price is unknown (never a silent 0). For a cache hit, tokens and ``usd``
    are the figures recorded when the response was first produced, ``cached`` is True, ``attempts``
    is 0 (no provider was asked) and ``latency_s`` is the time the lookup took; ``replayed_by_position``
    says a replay served the reply recorded at the same point of the run because the prompt differed. ``completion_tokens``
    includes ``reasoning_tokens`` (as providers bill them). ``finish_reason`` "length" means the reply
    was cut by ``max_tokens``. ``prompt_chars`` is the size of the messages sent. ``offline`` means no
    provider was asked (a mock or scripted reply, a replay miss): ``usd`` is then 0, never a price-map
    figure for a model that was not called.
    """

    model: str
    operator: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    finish_reason: str = ""
    prompt_chars: int = 0
    usd: Optional[float] = None
    latency_s: float = 0.0
    attempts: int = 0
    error: str = ""
    cached: bool = False
    replayed_by_position: bool = False
    offline: bool = False
    response: str = ""
    messages: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def truncated(self) -> bool:
        """The reply was cut off by the token limit, so it ends mid-way."""
        return self.finish_reason == "length"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> LLMCall:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})


@dataclass
class Usage:
    """Running totals over a run, checkpointed after every node and restored with ``from_dict``.

    Totals are nominal (cache hits included, see the module doc). ``usd`` is the known part of the
    cost; calls whose price is unknown are counted in ``unknown_cost_calls`` instead. Failed calls
    count in ``calls`` and ``failed_calls`` and add only the tokens they consumed (a reasoning model
    that thought until the limit and answered nothing still costs). ``add`` takes a lock: operators
    may call the LLM from several threads at once. ``offline_calls`` counts calls no provider answered
    (offline or cache hits): when that is every call, the run cost nothing (``offline``).
    """

    _lock: ClassVar[threading.Lock] = threading.Lock()

    calls: int = 0
    failed_calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    usd: float = 0.0
    cached_usd: float = 0.0
    unknown_cost_calls: int = 0
    offline_calls: int = 0
    operator_calls: dict[str, int] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def spent_usd(self) -> float:
        """Money actually paid to providers: nominal cost minus what the cache served."""
        return self.usd - self.cached_usd

    @property
    def offline(self) -> bool:
        """Every call so far was answered without a provider (mock, script, replay cache)."""
        return self.calls > 0 and self.offline_calls == self.calls

    @property
    def reported_usd(self) -> float:
        """The cost shown to people: 0 for an offline run (a replay's recorded cost is not spent again;
        ``usd`` keeps it, as budgets count it), else the nominal cost."""
        return 0.0 if self.offline else self.usd

    def add(self, call: LLMCall) -> None:
        with self._lock:
            self.calls += 1
            self.offline_calls += call.offline or call.cached
            self.operator_calls[call.operator] = self.operator_calls.get(call.operator, 0) + 1
            self.prompt_tokens += call.prompt_tokens
            self.completion_tokens += call.completion_tokens
            self.reasoning_tokens += call.reasoning_tokens
            if call.usd is not None:
                self.usd += call.usd
            if call.error:
                self.failed_calls += 1
                return
            if call.usd is None:
                self.unknown_cost_calls += 1
            if call.cached:
                self.cached_calls += 1
                self.cached_usd += call.usd or 0.0

    def mean_call_usd(self) -> float:
        priced = self.calls - self.failed_calls - self.unknown_cost_calls
        return self.usd / priced if priced > 0 else 0.0

    def mean_call_tokens(self) -> float:
        answered = self.calls - self.failed_calls
        return self.total_tokens / answered if answered > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            return asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> Usage:
        """Restore a checkpoint; unknown keys are ignored and missing ones default to 0."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (raw or {}).items() if k in known})


OFFLINE_LABEL = "(offline LLM)"


def cost_text(usd: float | None, offline: bool = False, unpriced_calls: int = 0) -> str:
    """A cost as the console and reports show it: "$0.0123", "$0.0000 (offline LLM)", "$?" unknown, and
    never a bare "$0.0000" for calls to a model litellm cannot price (they are not free)."""
    if offline:
        return f"$0.0000 {OFFLINE_LABEL}"
    if usd is None or (unpriced_calls and not usd):
        return "$? (model not in litellm's price map)" if unpriced_calls else "$?"
    return f"${usd:.4f}" + (f" + {unpriced_calls} unpriced call(s)" if unpriced_calls else "")
