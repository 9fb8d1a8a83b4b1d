"""The built-in agents, one module each (aide, greedy, mcts, ...); what they share lives in `agents.kit`.

May import: `benchmark.plugins`, `benchmark.contract`, `benchmark.records`, `benchmark.tasks`, `benchmark.edits`,
`benchmark.llm`, `benchmark.common`. Nothing in `benchmark` imports it: agents are loaded by module name.
"""
from benchmark.common import moved

moved.install()  # `agents.operators` and the kit's other old paths, for one more release (docs/architecture.md)
