"""The task runtime: harness code that every task's driver and evaluator share instead of copying.

It depends only on the standard library, numpy and pandas (torch where a function says so), never on
`benchmark`. Every job the harness runs can import it: a bubblewrap sandbox binds it read-only at
/job/lib/task_runtime with /job/lib on PYTHONPATH; Modal gets an upload that is root-owned and
read-only; an unsandboxed job (sandbox=none) imports the harness's own copy. It is not one of a
task's files, so agents cannot edit it (their code may import it).
docs/tasks.md, "The task runtime", says how a driver and an evaluator use it.
"""

from .cli import DriverArgs, driver_main, evaluator_main, parse_driver_args
from .data import read_npz, read_table
from .errors import DriverError, InvalidPredictions
from .isolation import IsolationError, install_guard, run_isolated
from .outputs import write_atomic, write_metrics, write_predictions
from .params import read_params
from .predictions import integer_column, match_ids, read_predictions
from .returned import as_arrays, as_labels, as_vector, load_arrays, load_labels
from .seeding import seed_everything
from .torch_setup import pick_device, warm_up_torch

__all__ = [
    "DriverArgs", "DriverError", "InvalidPredictions", "IsolationError", "as_arrays", "as_labels", "as_vector",
    "driver_main", "evaluator_main", "install_guard", "integer_column", "load_arrays", "load_labels",
    "match_ids", "parse_driver_args", "pick_device", "read_npz", "read_params", "read_predictions",
    "read_table", "run_isolated", "seed_everything", "warm_up_torch", "write_atomic", "write_metrics",
    "write_predictions",
]
