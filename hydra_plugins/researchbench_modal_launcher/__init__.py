"""`hydra/launcher=modal`: each job of a researchbench sweep runs as a whole run in its own Modal sandbox.

Shipped inside researchbench (the `hydra_plugins` namespace package has no __init__.py, so Hydra's
plugin scan finds this next to the joblib and submitit launchers). The work is done by
benchmark/launch/modal_runs.py; docs/modal.md describes it.
"""
