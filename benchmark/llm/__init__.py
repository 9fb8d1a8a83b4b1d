"""The LLM client agents call: litellm behind retries, timeouts and budget caps (`client`), the endpoint's
settings (`config`), token and USD accounting (`accounting`) and the record/replay cache (`cache`).
Importing it does not import litellm (that happens on the first call).

May import: `benchmark.common` only.
"""
from benchmark.llm.accounting import LLMCall, Usage
from benchmark.llm.client import LLMClient
from benchmark.llm.config import LLMConfig, OperatorLLMConfig

__all__ = ["LLMCall", "LLMClient", "LLMConfig", "OperatorLLMConfig", "Usage"]
