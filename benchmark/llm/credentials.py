"""Whether an LLM config can run as is, answered before anything heavy loads.

Why a table here: importing litellm takes seconds, and a missing key should be reported in well under
one. This module is the one home of the provider -> key variable table (the names litellm's
`validate_environment` asks for; tests/llm/test_llm.py checks that they agree). A provider the table does
not know falls back to asking litellm, slower but never wrong.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from researchbench.benchmark.llm.config import LLMConfig, as_config, script_path

# provider -> (key variables, whether any one of them suffices rather than all)
PROVIDER_KEYS: dict[str, tuple[tuple[str, ...], bool]] = {
    "openai": (("OPENAI_API_KEY",), False),
    "anthropic": (("ANTHROPIC_API_KEY",), False),
    "gemini": (("GEMINI_API_KEY", "GOOGLE_API_KEY"), True),
    "openrouter": (("OPENROUTER_API_KEY",), False),
    "mistral": (("MISTRAL_API_KEY",), False),
    "groq": (("GROQ_API_KEY",), False),
    "deepseek": (("DEEPSEEK_API_KEY",), False),
    "together_ai": (("TOGETHERAI_API_KEY",), False),
    "xai": (("XAI_API_KEY",), False),
    "cohere": (("COHERE_API_KEY",), False),
    "fireworks_ai": (("FIREWORKS_AI_API_KEY",), False),
}
KEYLESS_PROVIDERS = frozenset({"ollama", "ollama_chat", "hosted_vllm", "vllm", "lm_studio"})
EITHER_KEY_PROVIDERS = frozenset(p for p, (_, any_one) in PROVIDER_KEYS.items() if any_one)  # 0.1.0 named these
# Bare model names (no "provider/") litellm routes by their family; others are left to litellm.
BARE_MODEL_PREFIXES = {"gpt-": "openai", "chatgpt-": "openai", "o1": "openai", "o3": "openai", "o4": "openai",
                       "claude-": "anthropic"}
NO_LLM_HINT = "(or run a non-LLM agent: agent=optuna)"


def provider_of(model: str) -> Optional[str]:
    """The provider litellm would route `model` to, when that is plain from the name; else None."""
    head, slash, _ = model.partition("/")
    if slash:
        return head if head in PROVIDER_KEYS or head in KEYLESS_PROVIDERS else None
    return next((p for prefix, p in BARE_MODEL_PREFIXES.items() if model.startswith(prefix)), None)


def _missing_keys(model: str) -> tuple[list[str], bool] | str:
    """(the key variables not set, whether one would do), or a line saying the model names no provider."""
    provider = provider_of(model)
    if provider in KEYLESS_PROVIDERS:
        return [], False
    if provider is not None:
        names, any_one = PROVIDER_KEYS[provider]
        missing = [n for n in names if not os.environ.get(n)]
        enough = len(missing) < len(names) if any_one else not missing
        return ([] if enough else missing), any_one
    from researchbench.benchmark.llm.client import import_litellm  # a provider the table does not know: ask litellm

    litellm = import_litellm()
    try:
        provider = litellm.get_llm_provider(model=model)[1]
    except Exception:
        return f"llm.model={model!r} names no provider litellm knows (try e.g. openai/{model})"
    if provider in KEYLESS_PROVIDERS:
        return [], False
    check = litellm.validate_environment(model=model)
    missing = [k for k in check.get("missing_keys") or [] if not os.environ.get(k)]
    return ([] if check.get("keys_in_environment") else missing), False


def missing_credentials(cfg: LLMConfig | Any) -> Optional[str]:
    """One user-facing line naming the env var to set, or None when the config can run as is."""
    cfg = as_config(cfg)
    if cfg.script:
        return None if script_path(cfg.script).exists() else \
            f"llm.script={cfg.script} does not exist; give a folder or file of replies (docs/agents.md)"
    if cfg.mock_responses:
        return None
    if cfg.api_key_env:
        return None if os.environ.get(cfg.api_key_env) else f"set {cfg.api_key_env} {NO_LLM_HINT}"
    if cfg.api_base:
        return None  # a custom endpoint (vLLM, Ollama) without api_key_env needs no key
    found = _missing_keys(cfg.model)
    if isinstance(found, str):
        return found
    missing, any_one = found
    return f"set {(' or ' if any_one else ' and ').join(missing)} {NO_LLM_HINT}" if missing else None
