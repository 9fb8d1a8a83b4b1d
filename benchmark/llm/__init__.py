"""The LLM client agents call: litellm behind retries, timeouts and budget caps (`client`), the endpoint's
settings (`config`), token and USD accounting (`accounting`) and the record/replay cache (`cache`).
Importing it does not import litellm (that happens on the first call).

May import: `researchbench.benchmark.common` only.
"""
from researchbench.benchmark.llm.accounting import LLMCall, Usage
from researchbench.benchmark.llm.client import LLMClient
from researchbench.benchmark.llm.config import LLMConfig, OperatorLLMConfig

__all__ = ["LLMCall", "LLMClient", "LLMConfig", "OperatorLLMConfig", "Usage"]

from researchbench.benchmark.common.moved import Lazy, deprecated_names  # noqa: E402  (after the names that stay)

# Names `researchbench.benchmark.llm` had in 0.1.0, when it was one module; imported only when used (no litellm here).
__getattr__ = deprecated_names(__name__, {
    name: (Lazy(module, name), f"import it from {module}")
    for module, names in {
        "researchbench.benchmark.common.errors": ("BudgetExhausted", "UserError"),
        "researchbench.benchmark.llm.config": ("CACHE_MODES",),
        "researchbench.benchmark.llm.credentials": ("EITHER_KEY_PROVIDERS", "KEYLESS_PROVIDERS", "missing_credentials"),
        "researchbench.benchmark.llm.cache": ("ResponseCache", "cache_key"),
        "researchbench.benchmark.llm.client": ("EmptyReply", "MAX_BACKOFF_S", "MAX_ERROR_CHARS", "NO_KEY_PLACEHOLDER",
                                 "ThoughtToTheLimit", "is_transient", "load_script"),
    }.items() for name in names})
