"""The LLM client agents call: litellm behind retries, timeouts, token and USD accounting, budget caps and
a record/replay cache (`client`). Importing it does not import litellm (that happens on the first call).

May import: `benchmark.common` only.
"""
from benchmark.llm.client import LLMCall, LLMClient, LLMConfig, OperatorLLMConfig, Usage

__all__ = ["LLMCall", "LLMClient", "LLMConfig", "OperatorLLMConfig", "Usage"]
