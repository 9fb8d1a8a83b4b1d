"""Deprecated: moved to `benchmark.plugins.edits`; this path goes away in the next release."""
from benchmark.common.moved import alias

alias(__name__, "benchmark.plugins.edits")
