"""The researchbench harness, installed as `researchbench.benchmark`; docs/architecture.md maps its folders."""

if __name__ == "benchmark":  # a source checkout imported under 0.1.0's top-level name: one module, two names
    from researchbench.benchmark.common.moved import answer_as_namespaced

    answer_as_namespaced(__name__)
