"""Deprecated: moved to `benchmark.records.journal`; this path goes away in the next release."""
from benchmark.common.moved import alias

alias(__name__, "benchmark.records.journal")
