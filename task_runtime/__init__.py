"""The task runtime: harness code that every task's driver and evaluator share instead of copying.

It depends only on the standard library, numpy and pandas (torch where a function says so) and never
on `benchmark`. Inside a job's sandbox and the evaluator's it is importable and read-only (the harness
binds it at /job/lib/task_runtime and puts /job/lib on PYTHONPATH); agent code may import it too, but
the harness restores nothing from it: it is not part of the task's files. docs/tasks.md, "The task
runtime", says how a driver and an evaluator use it.
"""

from task_runtime.cli import DriverArgs, driver_main, evaluator_main, parse_driver_args
from task_runtime.data import read_npz, read_table
from task_runtime.errors import DriverError, InvalidPredictions
from task_runtime.isolation import IsolationError, install_guard, run_isolated
from task_runtime.outputs import write_atomic, write_metrics, write_predictions
from task_runtime.params import read_params
from task_runtime.predictions import integer_column, match_ids, read_predictions
from task_runtime.returned import as_arrays, as_labels, as_vector, load_arrays, load_labels
from task_runtime.seeding import seed_everything
from task_runtime.torch_setup import pick_device, warm_up_torch

__all__ = [
    "DriverArgs", "DriverError", "InvalidPredictions", "IsolationError", "as_arrays", "as_labels", "as_vector",
    "driver_main", "evaluator_main", "install_guard", "integer_column", "load_arrays", "load_labels",
    "match_ids", "parse_driver_args", "pick_device", "read_npz", "read_params", "read_predictions",
    "read_table", "run_isolated", "seed_everything", "warm_up_torch", "write_atomic", "write_metrics",
    "write_predictions",
]
