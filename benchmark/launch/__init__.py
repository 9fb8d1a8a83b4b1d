"""Launching many runs: sweeps over Hydra's multirun (`sweep`, `sweep_table`) and running whole runs on
Modal (`modal_launch`, used by the hydra/launcher=modal plugin, and `modal_runs`).

May import: `researchbench.benchmark.run` and everything below it; never `researchbench.benchmark.cli`.
"""
