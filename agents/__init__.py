"""The built-in agents, one module each (aide, greedy, mcts, ...); what they share lives in `researchbench.agents.kit`.

May import: `researchbench.benchmark.plugins`, `researchbench.benchmark.contract`, `researchbench.benchmark.records`, `researchbench.benchmark.tasks`, `researchbench.benchmark.edits`,
`researchbench.benchmark.llm`, `researchbench.benchmark.common`. Nothing in `benchmark` imports it: agents are loaded by module name.
"""

if __name__ == "agents":  # a source checkout imported under 0.1.0's top-level name: one module, two names
    from researchbench.benchmark.common.moved import answer_as_namespaced

    answer_as_namespaced(__name__)
