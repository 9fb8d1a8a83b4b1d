"""One run of an agent on a task: the engine and its loop (`engine`, `scheduler`, `worker`), budgets
(`budget`), running a node's phases in a job (`experiment`, `commands`), the final test on hidden data
(`final_test`), `summary.json` (`summary`), infrastructure outages (`outage`), the Hydra config schema
(`config`), checks before a run starts (`preflight`) and the progress view (`display`).

May import: `researchbench.benchmark.scoring` (the export after a run), `researchbench.benchmark.plugins`, `researchbench.benchmark.contract`, `researchbench.benchmark.records`,
`researchbench.benchmark.executors`, `researchbench.benchmark.edits`, `researchbench.benchmark.llm`, `researchbench.benchmark.tasks`, `researchbench.benchmark.common`. Nothing is imported here,
so importing a light module of this package does not load the engine.
"""
