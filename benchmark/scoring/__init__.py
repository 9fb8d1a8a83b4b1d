"""Scoring runs after the fact: one module per job (see docs/metrics.md for every formula).

runs (read a run dir, never the live workspace) -> selection (which runs count: outages, unfinished
and repeated seeds are listed as not scored) -> keys (the comparison key: agent, task, version,
budget, LLM source, config) -> ranges (NI ranges: our manifests' or FML-bench's) -> normalize (three
normalized scores) -> process (FML-bench's 12 process metrics, exact and corrected) -> farbench (six
diagnostics, regimes) -> noise_gap (the best node's val->test drop against the task's noise) -> operators
(per-operator statistics) -> stats (seeds, CIs, paired comparisons,
power, aggregates) -> tables (per run, groups, raw) and comparisons (across agents: shared tasks,
paired, domains) -> plots / report (HTML). embeddings holds the GraphCodeBERT encoder; export writes
a finished run's best_solution/ and report.html. pipeline runs them all; heavy libraries (torch,
transformers, matplotlib, scipy) load only where used.
"""
