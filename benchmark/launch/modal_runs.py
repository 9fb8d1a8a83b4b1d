"""Whole runs on Modal, for the `hydra/launcher=modal` sweep launcher: one Sandbox per run.

Each run's sandbox gets an image with the harness's dependencies and the task's requirements (pinned
to the local versions, see benchmark/executors/modal/image.py), then one tar with the harness code,
the task's prepared workspace and, when resuming, the run dir so far, all at their host paths. The
run is the same command a user types (`run_agent_benchmark.py <overrides>`); when it ends, its run
dir comes back as a tar parsed as hostile input and lands where a local run would have written it,
so re-running the sweep resumes each job and the sweep table reads it like any other.

The run's sandbox holds what the agent loop and the evaluator need: the LLM keys, the Modal token and
the task's labels. Agent code therefore never runs in it: each job's experiments must use
`executor=modal` (each in a sandbox of its own, without network, keys or labels) unless the user sets
`agent_code_in_run` knowingly, and no sandbox of the remote run may silently fall back to none.
docs/modal.md says when to choose this or a local sweep with `executor=modal`.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from researchbench.benchmark.common.paths import REPO_ROOT
from researchbench.benchmark.executors.modal.image import ImageSpec, pin
from researchbench.benchmark.executors.output import CappedWriter
from researchbench.benchmark.executors.remote_files import CappedBuffer, Oversize, pack, unpack
from researchbench.benchmark.tasks.manifest import TaskSpec

log = logging.getLogger(__name__)

UPLOAD_TAR = "/__researchbench/run-upload.tar"
SWEEP_TAG = "researchbench-sweep"
# Provider keys passed on to the remote run when set here (an LLM agent needs its key there).
KEY_ENV = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "MISTRAL_API_KEY",
           "GROQ_API_KEY", "DEEPSEEK_API_KEY", "OPENROUTER_API_KEY", "TOGETHER_API_KEY", "AZURE_API_KEY",
           "AZURE_API_BASE", "AZURE_API_VERSION", "HF_TOKEN")
_SKIP_DIRS = {".git", "results", "workspace", "__pycache__", ".venv", "venv", ".pytest_cache", "multirun",
              "outputs"}


@dataclass
class RemoteRunSettings:
    app_name: str = "researchbench"
    cpu: float = 2.0
    memory_gb: float = 8.0
    gpu: Optional[str] = None  # for runs whose experiments use executor=local on the run's own GPU
    timeout_s: int = 24 * 3600  # Modal's longest sandbox lifetime
    python_version: Optional[str] = None
    remote_python: str = "python"
    extra_env: list[str] = field(default_factory=list)  # more variable names to pass on when set here
    max_download_gb: float = 8.0
    agent_code_in_run: bool = False  # allow experiments in the run's own sandbox, beside its keys and labels


AGENT_CODE_FLAG = "hydra.launcher.agent_code_in_run"
# Per executor, the sandbox setting a remote run pins to bwrap unless the user set it: under Modal's
# container runtime `auto` could otherwise degrade to no sandbox without anyone choosing that.
SANDBOX_KEYS = {"modal": "executor.local_sandbox", "local": "executor.sandbox"}


def placement_problem(executor: str, agent_code_in_run: bool) -> str:
    """Why a run with this executor must not run as a whole on Modal, or "" when it may."""
    if executor == "modal" or agent_code_in_run:
        return ""
    return (f"hydra/launcher=modal with executor={executor} would run agent code in the run's own sandbox, "
            f"beside its LLM keys and the task's labels: add executor=modal (each experiment in a sandbox of "
            f"its own, without network), or set {AGENT_CODE_FLAG}=true to accept that")


def remote_overrides(overrides: list[str], executor: str, run_dir: Path) -> list[str]:
    """The remote run's command-line overrides: the user's, its sandbox pinned, and the run dir the
    launcher computed here (named in full: the pin would otherwise change the run id)."""
    kept = [o for o in overrides if not o.lstrip("+~").startswith(("hydra", "results_dir=", "run_id="))]
    key = SANDBOX_KEYS.get(executor)
    if key and not any(o.lstrip("+~").startswith(f"{key}=") for o in kept):
        kept.append(f"{key}=bwrap")
    return [*kept, f"results_dir={run_dir.parents[2]}", f"run_id={run_dir.name}"]


@dataclass
class RemoteRun:
    overrides: list[str]  # the job's overrides, as the user wrote them
    executor: str  # the run's executor (its composed config's executor.name)
    run_dir: Path  # where the engine will write this run (absolute; the same path remotely)
    workspace: Path  # the task's prepared workspace dir
    task: TaskSpec
    log_path: Path  # the remote run's stdout+stderr, capped


def harness_image(task: TaskSpec, settings: RemoteRunSettings) -> ImageSpec:
    """The harness's own dependencies plus the task's requirements, pinned to the versions here."""
    try:
        core = [r for r in importlib.metadata.requires("researchbench") or [] if "extra ==" not in r]
    except importlib.metadata.PackageNotFoundError:
        core = []
    packages = [pin(r.split(";")[0].strip()) for r in core]
    packages += [pin(r.pip) for r in task.requirements if not r.no_deps]
    no_deps = [pin(r.pip) for r in task.requirements if r.no_deps]
    version = settings.python_version or f"{sys.version_info.major}.{sys.version_info.minor}"
    return ImageSpec(version, tuple(dict.fromkeys(packages)), tuple(no_deps))


def harness_files(root: Path = REPO_ROOT) -> list[Path]:
    """The harness checkout: git's tracked and unignored files (with researchbench/'s links to the folders,
    packed as links), else a walk without results/data."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=root,
                             capture_output=True, timeout=60, check=True).stdout
        files = [root / name for name in out.decode().split("\0") if name]
        return [p for p in files if (p.is_file() or p.is_symlink()) and not _SKIP_DIRS & set(p.relative_to(root).parts)]
    except (OSError, subprocess.SubprocessError):
        files = []
        for base, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
            files += [Path(base) / n for n in names]
        return files


def remote_env(settings: RemoteRunSettings, executor: str) -> dict[str, str]:
    """The remote run's environment, given to its harness process: LLM keys, and with executor=modal the
    Modal token its experiments' sandboxes are made with."""
    from researchbench.benchmark.executors.modal.image import modal_token
    from researchbench.benchmark.tasks.workspace import workspace_root

    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "RESEARCHBENCH_WORKSPACE": str(workspace_root())}
    for name in (*KEY_ENV, *settings.extra_env, "RESEARCHBENCH_TASKS_PATH", "RESEARCHBENCH_DISABLE_ENTRYPOINTS"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    token = modal_token() if executor == "modal" else None
    if token:
        env["MODAL_TOKEN_ID"], env["MODAL_TOKEN_SECRET"] = token
    return env


def run_remotely(client: Any, app: Any, image: Any, run: RemoteRun, settings: RemoteRunSettings,
                 tag: str) -> int:
    """Run one whole run in its own sandbox and bring its run dir back; the run's exit code.

    Raises on Modal/network errors: the launcher records the job as failed, and the next sweep
    resumes it from whatever run dir came back before."""
    sandbox = client.Sandbox.create(
        app=app, image=image, timeout=int(settings.timeout_s), cpu=float(settings.cpu),
        memory=int(settings.memory_gb * 1024), gpu=settings.gpu, tags={SWEEP_TAG: tag},
        block_network=False,  # the agent's LLM calls and Modal's API; agent code runs in sandboxes of its own
    )
    try:
        files = [*harness_files(), run.workspace, *([run.run_dir] if run.run_dir.exists() else [])]
        tasks_path = [Path(p) for p in os.environ.get("RESEARCHBENCH_TASKS_PATH", "").split(os.pathsep) if p]
        sandbox.filesystem.write_bytes(pack([*files, *(p for p in tasks_path if p.exists())]), UPLOAD_TAR)
        _wait(sandbox, ["tar", "-x", "-f", UPLOAD_TAR, "-C", "/"])
        argv = [settings.remote_python, str(REPO_ROOT / "run_agent_benchmark.py"),
                *remote_overrides(run.overrides, run.executor, run.run_dir)]
        writer = CappedWriter(run.log_path, 8 << 20)
        try:
            proc = sandbox.exec(*argv, timeout=int(settings.timeout_s), workdir=str(REPO_ROOT),
                                env=remote_env(settings, run.executor), text=False)
            threads = [threading.Thread(target=_copy, args=(s, writer), daemon=True) for s in (proc.stdout, proc.stderr)]
            for thread in threads:
                thread.start()
            code = proc.wait()
            for thread in threads:
                thread.join(timeout=30)
        finally:
            writer.close()
        cap = int(settings.max_download_gb * 1024**3)
        sink = CappedBuffer(cap)
        try:
            _wait(sandbox, ["tar", "-C", "/", "-cf", "-", str(run.run_dir).lstrip("/")], stdout=sink)
        except Oversize:
            log.warning("modal: %s is over %.1f GB; not downloaded", run.run_dir, settings.max_download_gb)
            return code if code else 1
        problem = unpack(sink.getvalue(), [run.run_dir]).violation
        if problem:
            log.warning("modal: the run dir of %s came back damaged: %s", run.run_dir, problem)
        return code
    finally:
        try:
            sandbox.terminate()
        except Exception as exc:
            log.debug("modal: terminate failed: %s", exc)


def _copy(stream: Any, sink: Any) -> None:
    try:
        for chunk in stream:
            sink.write(chunk if isinstance(chunk, bytes) else str(chunk).encode())
    except Exception as exc:  # Oversize, or the stream broke: the exit status still counts
        sink.error = exc


def _wait(sandbox: Any, argv: list[str], stdout: Any = None) -> None:
    out, err = stdout if stdout is not None else CappedBuffer(1 << 20), CappedBuffer(1 << 20)
    proc = sandbox.exec(*argv, timeout=3600, text=False)
    threads = [threading.Thread(target=_copy, args=(s, k), daemon=True) for s, k in ((proc.stdout, out), (proc.stderr, err))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if isinstance(getattr(out, "error", None), Oversize):
        raise out.error
    code = proc.wait()
    if code != 0 and stdout is None:
        raise RuntimeError(f"{argv[0]} failed in the sandbox (exit {code}): "
                           f"{err.getvalue().decode(errors='replace')[-300:]}")
