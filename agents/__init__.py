"""The built-in agents, one module each (aide, greedy, mcts, ...); what they share lives in `agents.kit`.
Installed as `researchbench.agents`.

May import: the public API (`researchbench`), as a third-party agent does, and `researchbench.benchmark`'s
contract, records, tasks, edits, llm and common. Nothing in `benchmark` imports it: agents are loaded by name.
"""

if __name__ == "agents":  # a source checkout imported under 0.1.0's top-level name: one module, two names
    from researchbench.benchmark.common.moved import answer_as_namespaced

    answer_as_namespaced(__name__)
