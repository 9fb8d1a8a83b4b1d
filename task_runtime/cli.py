"""The command lines every driver and evaluator share, and the one-line error contract around them.

A driver is run by the harness as

    python driver.py --phase val  --data <public dir> --out <output dir> [--seed N]
    python driver.py --phase test --data <public dir> --test-inputs <dir> --out <output dir> [--seed N]

and an evaluator as

    python evaluate.py --phase val|test --predictions-dir <dir> --labels <labels dir> --metrics <out.json>

`driver_main` and `evaluator_main` parse these, run the task's own function, and turn DriverError or
InvalidPredictions into one line on stderr and exit code 1 (the harness shows that line to the agent).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from .errors import DriverError, InvalidPredictions
from .outputs import write_metrics

PHASES = ("val", "test")


@dataclass(frozen=True)
class DriverArgs:
    """A driver's parsed command line; `inputs` is the phase's inputs to predict (a file or a folder)."""

    phase: str
    data: Path
    inputs: Path
    out: Path
    seed: int = 0


def parse_driver_args(description: str, inputs: str, seed_help: Optional[str] = None,
                      argv: Optional[Sequence[str]] = None) -> DriverArgs:
    """Parse a driver's command line. `inputs` names the phase's inputs with "{phase}" in it, e.g.
    "{phase}_inputs.csv": under --data for val, under --test-inputs for test. `seed_help`: accept --seed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--phase", choices=PHASES, required=True)
    parser.add_argument("--data", type=Path, required=True, help="public data dir")
    parser.add_argument("--test-inputs", type=Path, help=f"dir with {inputs.format(phase='test')} (test phase only)")
    parser.add_argument("--out", type=Path, required=True, help="where the predictions are written")
    if seed_help is not None:
        parser.add_argument("--seed", type=int, default=0, help=seed_help)
    args = parser.parse_args(argv)
    if args.phase == "test" and args.test_inputs is None:
        parser.error("--phase test needs --test-inputs")
    folder = args.data if args.phase == "val" else args.test_inputs
    return DriverArgs(phase=args.phase, data=args.data.resolve(),
                      inputs=(folder / inputs.format(phase=args.phase)).resolve(), out=args.out,
                      seed=getattr(args, "seed", 0))


def driver_main(run: Callable[[DriverArgs], object], description: str, inputs: str,
                seed_help: Optional[str] = None, argv: Optional[Sequence[str]] = None) -> int:
    """Parse the command line (`parse_driver_args`), call `run(args)`; a DriverError becomes
    'driver error: ...' on stderr and exit code 1."""
    args = parse_driver_args(description, inputs, seed_help, argv)
    try:
        run(args)
    except DriverError as exc:
        print(f"driver error: {exc}", file=sys.stderr)
        return 1
    return 0


def evaluator_main(evaluate: Callable[[str, Path, Path], dict[str, float]], description: str,
                   argv: Optional[Sequence[str]] = None) -> int:
    """Parse the evaluator's command line, call `evaluate(phase, predictions_dir, labels_dir)` and write
    its metrics; InvalidPredictions becomes its one line on stderr, exit code 1 and no metrics file."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--phase", choices=PHASES, required=True)
    parser.add_argument("--predictions-dir", type=Path, required=True)
    parser.add_argument("--labels", type=Path, required=True)
    parser.add_argument("--metrics", type=Path, required=True)
    args = parser.parse_args(argv)
    args.metrics.unlink(missing_ok=True)  # a stale file must never pass for this run's score
    try:
        metrics = evaluate(args.phase, args.predictions_dir, args.labels)
    except InvalidPredictions as exc:
        print(str(exc), file=sys.stderr)  # the harness records this line as the bug reason
        return 1
    write_metrics(args.metrics, metrics)
    return 0
