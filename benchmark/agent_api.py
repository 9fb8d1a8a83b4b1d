"""Deprecated: moved to `benchmark.plugins.agent_api`; this path goes away in the next release."""
from benchmark.common.moved import alias

alias(__name__, "benchmark.plugins.agent_api")
