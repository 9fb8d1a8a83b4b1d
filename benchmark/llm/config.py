"""The settings of one LLM endpoint and its per-operator overrides (Hydra's `llm` group)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Optional

from researchbench.benchmark.common.domains import domain
from researchbench.benchmark.common.paths import REPO_ROOT

CACHE_MODES = ("off", "record", "replay", "auto")
TEMPERATURE = {"ge": 0.0, "le": 2.0}  # the widest range the hosted APIs accept (OpenAI's, Gemini's)


@dataclass
class OperatorLLMConfig:
    """Per-operator overrides of the run's LLM settings (None = the run's value), as AIRA configures
    draft/improve/debug apart from analysis: e.g. ``+llm.operators.analyze.model=gpt-4o-mini``."""

    model: Optional[str] = None
    api_base: Optional[str] = None
    api_key_env: Optional[str] = None
    temperature: Optional[float] = domain(None, **TEMPERATURE)
    max_tokens: Optional[int] = domain(None, ge=1)
    extra: Optional[dict] = None


@dataclass
class LLMConfig:
    """Hydra structured config of one LLM endpoint (registered as ``llm/base_llm``).

    ``api_key_env`` names the env var holding the key. None means litellm's default variable for the
    provider, except when ``api_base`` is set: then an unset ``api_key_env`` means the endpoint needs
    no key (vLLM, Ollama), and no provider key from the environment is sent to that endpoint.
    ``max_retries`` counts retries after the first attempt. ``mock_responses`` makes every call a
    litellm ``mock_response`` (offline, real litellm code path); the run's n-th call gets entry
    ``n % len`` (n = ``Usage.calls``, so a resumed run continues the cycle). ``script`` names a file
    or folder of scripted replies (see ``load_script``), served in order per operator, for testing an
    agent offline. ``operators`` overrides settings per operator name (``draft``, ``analyze``, ...).
    ``max_tokens`` is large by default so a reply can hold whole editable files; a reasoning model
    spends part of it thinking.
    """

    model: str = "gpt-4o-mini"
    api_base: Optional[str] = None
    api_key_env: Optional[str] = None
    temperature: float = domain(0.0, **TEMPERATURE)
    max_tokens: int = domain(16384, ge=1)
    timeout_s: float = domain(120.0, gt=0)
    max_retries: int = domain(3, ge=0)
    retry_backoff_s: float = domain(1.0, ge=0)
    usd_cap: Optional[float] = domain(None, ge=0)
    token_cap: Optional[int] = domain(None, ge=0)
    cache: str = domain("off", one_of=CACHE_MODES)
    cache_dir: Optional[str] = None
    mock_responses: Optional[list[str]] = None
    script: Optional[str] = None
    operators: dict[str, OperatorLLMConfig] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

    def for_operator(self, operator: str) -> LLMConfig:
        """These settings with the operator's overrides applied."""
        override = self.operators.get(operator) if operator else None
        if override is None:
            return self
        if isinstance(override, Mapping):
            override = OperatorLLMConfig(**override)
        changes = {k: v for k, v in asdict(override).items() if v is not None}
        return replace(self, **changes)


def as_config(cfg: Any) -> LLMConfig:
    """Accept the dataclass itself or what Hydra hands over (a DictConfig or a plain mapping)."""
    if isinstance(cfg, LLMConfig):
        return cfg
    try:
        from omegaconf import DictConfig, OmegaConf

        if isinstance(cfg, DictConfig):
            cfg = OmegaConf.to_container(cfg, resolve=True)
    except ImportError:  # pragma: no cover - omegaconf ships with hydra-core
        pass
    raw = dict(cfg)
    raw["operators"] = {k: v if isinstance(v, OperatorLLMConfig) else OperatorLLMConfig(**v)
                        for k, v in (raw.get("operators") or {}).items()}
    return LLMConfig(**raw)


def script_path(path: str | os.PathLike[str]) -> Path:
    """``llm.script`` as given, or, when a relative path is not found from here, from the checkout: the
    preset's default (examples/scripts/<task>.yaml) then works from any directory."""
    given = Path(path).expanduser()
    return given if given.is_absolute() or given.exists() else REPO_ROOT / given
