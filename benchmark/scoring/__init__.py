"""Scoring runs after the fact: one module per job (see docs/metrics.md for every formula).

runs (read a run dir, never the live workspace) -> normalize (three normalized scores) ->
process (FML-bench's 12 process metrics, exact and corrected) -> farbench (six diagnostics, regimes) ->
operators (per-operator statistics) -> stats (seeds, CIs, paired comparisons, aggregates) -> tables ->
plots / report (HTML). embeddings holds the GraphCodeBERT encoder; export writes a finished run's
best_solution/ and report.html. Heavy libraries (torch, transformers, matplotlib) load only where used.
"""
