"""Deprecated: moved to `benchmark.tasks.manifest`; this path goes away in the next release."""
from benchmark.common.moved import alias

alias(__name__, "benchmark.tasks.manifest")
