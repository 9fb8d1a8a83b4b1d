"""Deprecated: moved to `benchmark.tasks.workspace`; this path goes away in the next release."""
from benchmark.common.moved import alias

alias(__name__, "benchmark.tasks.workspace")
