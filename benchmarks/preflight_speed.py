"""How fast a bad command line is refused: each case runs the real front door and must exit 2.

    python benchmarks/preflight_speed.py [--task causality] [--repeats 5] [--heavy]

Cases: a missing API key (llm=openai with OPENAI_API_KEY unset), a task that is not prepared (an empty
workspace), an unknown agent, an unknown task, a bad config value. The missing-key and bad-value cases
need `--task` prepared (`python setup.py --task causality`). Each row is the median wall and CPU
seconds over the repeats; with --heavy, the heavy libraries (HEAVY) each case imported, from `python -X
importtime`. Target: <= 1 s on an idle machine. A busy machine inflates wall time: the load average
is printed beside it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("litellm", "torch", "transformers", "optuna", "pandas", "modal", "sklearn")


@dataclass
class Case:
    """One failing command line, what its one error line must say, and the environment it runs in."""

    name: str
    overrides: list[str]
    expect: str
    env: dict[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()


def cases(task: str, empty_workspace: str) -> list[Case]:
    return [
        Case("missing API key", ["llm=openai", "agent=aide", f"task={task}"], "OPENAI_API_KEY",
             unset=("OPENAI_API_KEY",)),
        Case("task not prepared", ["agent=greedy", f"task={task}"], "is not prepared",
             env={"RESEARCHBENCH_WORKSPACE": empty_workspace}),
        Case("unknown agent", ["agent=no_such_agent", f"task={task}"], "unknown agent"),
        Case("unknown task", ["agent=greedy", "task=no_such_task"], "unknown task"),
        Case("bad config value", ["agent=greedy", f"task={task}", "llm.temperature=warm"], "bad value"),
    ]


def run_case(case: Case, importtime: bool = False) -> tuple[subprocess.CompletedProcess, float, float]:
    """(the finished process, wall s, CPU s) of one run of the front door on `case`."""
    env = {k: v for k, v in os.environ.items() if k not in case.unset} | case.env
    argv = [sys.executable, *(["-X", "importtime"] if importtime else []), str(REPO / "run_agent_benchmark.py"),
            *case.overrides]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return proc, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def error_lines(stderr: str) -> list[str]:
    """What the user sees on stderr, without `-X importtime`'s lines."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("import time:")]


def heavy_imports(stderr: str) -> list[str]:
    """The HEAVY top-level packages named in `-X importtime` output."""
    names = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in stderr.splitlines()
             if line.startswith("import time:")}
    return sorted(names & set(HEAVY))


def check(case: Case, proc: subprocess.CompletedProcess) -> str:
    """'' when the case failed the way it should (exit 2, one line naming the problem), else why not."""
    lines = error_lines(proc.stderr)
    if proc.returncode == 2 and len(lines) == 1 and case.expect in lines[0]:
        return ""
    return f"{case.name}: expected exit 2 and one line with {case.expect!r}, got exit {proc.returncode}: " \
           f"{' / '.join(lines)[-300:]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="causality", help="a prepared task (default causality)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--heavy", action="store_true", help="also list the heavy libraries each case imported")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        print("error: --repeats must be 1 or more", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="preflight-empty-workspace-") as empty:
        print(f"load average {os.getloadavg()[0]:.2f}; median of {args.repeats} run(s) per case")
        print(f"{'case':<20} {'wall s':>7} {'cpu s':>7}" + ("  heavy imports" if args.heavy else ""))
        for case in cases(args.task, empty):
            walls, cpus = [], []
            for _ in range(args.repeats):
                proc, wall, cpu = run_case(case)
                problem = check(case, proc)
                if problem:
                    print(f"error: {problem} (is --task {args.task} prepared? python setup.py --task {args.task})",
                          file=sys.stderr)
                    return 2
                walls.append(wall)
                cpus.append(cpu)
            row = f"{case.name:<20} {statistics.median(walls):>7.2f} {statistics.median(cpus):>7.2f}"
            if args.heavy:
                row += "  " + (", ".join(heavy_imports(run_case(case, importtime=True)[0].stderr)) or "none")
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
