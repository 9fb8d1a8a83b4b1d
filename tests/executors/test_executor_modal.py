"""The Modal executor, offline: the shared conformance suite against a local stand-in of the client
(tests/modal_standin.py: commands really run, in a bubblewrap container), the real `modal` objects
the executor builds (never contacting a server), and the engine running a whole run on it."""

from __future__ import annotations

import inspect
import json
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.executors.base import Executor, Job, Limits
from researchbench.benchmark.executors.local import sandbox as sandbox_mod
from researchbench.benchmark.executors.modal.backend import (DATA_MOUNT, PRIVATE_MOUNT, RUN_TAG, ModalExecutor,
                                                             ModalExecutorConfig)
from researchbench.benchmark.executors.modal.image import gpu_string, image_spec, modal_credentials_problem, pin
from researchbench.benchmark.tasks.manifest import Requirement
from tests.executor_conformance import ATTEMPT_SOURCE, ExecutorConformance, make_job, run
from tests.modal_standin import StandInModal, working_bwrap

BWRAP = working_bwrap()
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason="the stand-in needs a working bubblewrap")


def standin_executor(root: Path, **config: object) -> tuple[ModalExecutor, StandInModal]:
    client = StandInModal(root, BWRAP)
    cfg = ModalExecutorConfig(remote_python=sys.executable, disk_poll_s=0.2, **config)  # type: ignore[arg-type]
    return ModalExecutor(cfg, client=client), client


@pytest.fixture
def no_modal_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET", "MODAL_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(tmp_path / "no-modal.toml"))


@needs_bwrap
class TestConformanceStandIn(ExecutorConformance):
    isolated = True
    runs_on_harness_host = False
    cpu_time_limits = False  # Modal limits wall-clock time and reports no CPU time

    @pytest.fixture
    def executor(self, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Executor]:
        ex, client = standin_executor(tmp_path_factory.mktemp("modal-standin"))
        try:
            yield ex
        finally:
            ex.shutdown()
            assert all(sb.terminated for sb in client.sandboxes), "a sandbox was left running"


# -- what the executor asks of Modal ----------------------------------------------------------


@needs_bwrap
def test_sandbox_arguments_tags_and_upload(tmp_path: Path) -> None:
    ex, client = standin_executor(tmp_path / "standin", gpu="H100", max_concurrent_starts=2)
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.csv").write_text("x\n1\n")
    job = make_job(tmp_path, "import sys; print(open(sys.argv[1] + '/train.csv').read().split()[1])", str(data),
                   readonly=(data,), public=(data,), gpus=2, limits=Limits(cpus=3, memory_gb=6))
    try:
        result, out, err = run(ex, job)
        run(ex, make_job(tmp_path, "print(1)", name="again", readonly=(data,), public=(data,)))
    finally:
        ex.shutdown()
    assert result.ok and out == "1\n", err
    args = client.sandboxes[0].kwargs
    assert args["gpu"] == "H100:2" and args["cpu"] == 3.0 and args["memory"] == 6144
    assert args["block_network"] is True and args["timeout"] >= job.timeout_s
    assert args["tags"][RUN_TAG] == ex.run_tag and args["app"].name == "researchbench"
    assert set(args["volumes"]) == {DATA_MOUNT} and args["volumes"][DATA_MOUNT].read_only
    assert len(client.volumes["researchbench-data"].uploads) == 1, "public data is uploaded once per content"
    assert all(sb.terminated for sb in client.sandboxes) and not client.ephemeral


@needs_bwrap
def test_test_inputs_reach_the_test_job_only(tmp_path: Path) -> None:
    """The attack: after a final test, a validation job (of this run or any other) walks every mounted
    Volume for the hidden test inputs. They live in the test job's own ephemeral Volume, deleted after it."""
    ex, client = standin_executor(tmp_path / "standin")
    public, test_inputs = tmp_path / "data", tmp_path / "test_inputs"
    public.mkdir()
    test_inputs.mkdir()
    (public / "val_x.json").write_text("[1]\n")
    (test_inputs / "test_x.json").write_text("HIDDEN-TEST-INPUT\n")
    test = make_job(tmp_path, "import sys; print(open(sys.argv[1] + '/test_x.json').read().strip())",
                    str(test_inputs), name="test", readonly=(public, test_inputs), public=(public,))
    search = """
        import os
        found = []
        for base, dirs, files in os.walk("/__researchbench"):  # every Volume the job has mounted
            for name in files:
                try:
                    if b"HIDDEN-TEST-INPUT" in open(os.path.join(base, name), "rb").read():
                        found.append(os.path.join(base, name))
                except OSError:
                    pass
        print(found)
    """
    val = make_job(tmp_path, search, name="val", readonly=(public,), public=(public,), hidden=(test_inputs,))
    try:
        tested, test_out, test_err = run(ex, test)
        searched, val_out, val_err = run(ex, val)
    finally:
        ex.shutdown()
    assert tested.ok and test_out == "HIDDEN-TEST-INPUT\n", test_err
    assert searched.ok and val_out == "[]\n", f"a validation job read the hidden test inputs: {val_out} {val_err}"
    test_box, val_box = client.sandboxes
    assert set(test_box.kwargs["volumes"]) == {DATA_MOUNT, PRIVATE_MOUNT}
    assert all(v.read_only for v in test_box.kwargs["volumes"].values())
    assert set(val_box.kwargs["volumes"]) == {DATA_MOUNT}, "a validation job mounts more than the public data"
    for box in (test_box, val_box):
        assert not box.kwargs.get("secrets") and not box.kwargs.get("env"), "a job sandbox was given secrets"
    assert len(client.ephemeral) == 1 and client.ephemeral[0].deleted, "the test job's Volume outlived it"
    shared = client.volumes["researchbench-data"].dir
    assert not any(b"HIDDEN" in p.read_bytes() for p in shared.rglob("*") if p.is_file())


@needs_bwrap
def test_orphans_of_the_same_run_are_terminated(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from researchbench.benchmark.executors.modal.backend import run_tag

    ex, client = standin_executor(tmp_path / "standin")
    app = client.App.lookup("researchbench", create_if_missing=True)
    run_dir = tmp_path / "run"
    orphan = client.Sandbox.create(app=app, tags={RUN_TAG: run_tag(run_dir)})  # left by a killed harness
    stranger = client.Sandbox.create(app=app, tags={RUN_TAG: run_tag(tmp_path / "another-run")})
    ex.bind_run(SimpleNamespace(requirements=()), run_dir)
    ex.shutdown()
    assert orphan.terminated and not stranger.terminated


@needs_bwrap
def test_concurrent_starts_are_bounded(tmp_path: Path) -> None:
    ex, client = standin_executor(tmp_path / "standin", max_parallel=3, max_concurrent_starts=1)
    create, inside, peak = client.Sandbox.create, [0], [0]
    lock = threading.Lock()

    def slow_create(*args, **kwargs):
        with lock:
            inside[0] += 1
            peak[0] = max(peak[0], inside[0])
        time.sleep(0.2)
        with lock:
            inside[0] -= 1
        return create(*args, **kwargs)

    client.Sandbox.create = slow_create
    try:
        futures = [ex.submit(make_job(tmp_path, "print(1)", name=f"j{i}")) for i in range(3)]
        assert all(f.result(timeout=120).ok for f in futures)
    finally:
        ex.shutdown()
    assert peak[0] == 1


@needs_bwrap
def test_network_failure_is_a_failed_job_and_the_next_one_runs(tmp_path: Path) -> None:
    ex, client = standin_executor(tmp_path / "standin")
    client.fail_create = 1
    try:
        failed, _, _ = run(ex, make_job(tmp_path, "print(1)", name="a"))
        ok, out, _ = run(ex, make_job(tmp_path, "print(2)", name="b"))
    finally:
        ex.shutdown()
    assert failed.error.startswith("modal: ") and "connect" in failed.error and not failed.ok
    assert ok.ok and out == "2\n"


@needs_bwrap
def test_evaluator_jobs_run_locally(tmp_path: Path) -> None:
    ex, client = standin_executor(tmp_path / "standin")
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "y.csv").write_text("SECRET\n")
    job = make_job(tmp_path, "import sys; print(open(sys.argv[1]).read().strip())", str(labels / "y.csv"),
                   readonly=(labels,), local_only=True)
    try:
        result, out, _ = run(ex, job)
    finally:
        ex.shutdown()
    assert result.ok and out == "SECRET\n"
    assert not client.sandboxes and not client.volumes, "a local-only job reached Modal"


# -- the real modal objects, built offline -------------------------------------------------------


def dockerfile(image: object, builder_version: str = "2024.10") -> list[str]:
    """The Dockerfile commands of a real modal.Image, base layers first, rendered offline from the
    layer functions modal keeps for its build (private API: a modal upgrade may need this adjusted)."""
    import modal
    from modal._utils.async_utils import synchronizer

    private = synchronizer._translate_in(image) if isinstance(image, modal.Image) else image
    scope = inspect.getclosurevars(private._load).nonlocals
    commands: list[str] = []
    for base in (scope.get("base_images") or {}).values():
        commands += dockerfile(base, builder_version)
    if scope.get("dockerfile_function"):
        commands += [c for c in scope["dockerfile_function"](builder_version).commands if c != "FROM base"]
    return commands


def test_real_modal_objects_offline(tmp_path: Path) -> None:
    import modal

    ex = ModalExecutor(ModalExecutorConfig(gpu="A100-80GB", extra_pip=["tenacity"]), client=modal)
    ex._app = modal.App("researchbench-test")  # App.lookup would contact Modal: never in tests
    ex._image_spec = image_spec((Requirement("numpy>=1.25"), Requirement("torch", no_deps=True)), ["tenacity"])
    data, test_inputs = tmp_path / "data", tmp_path / "test_inputs"
    data.mkdir()
    test_inputs.mkdir()
    job = make_job(tmp_path, "print(1)", readonly=(data, test_inputs), public=(data,), gpus=1, timeout_s=100)
    own = modal.Volume.from_name("a-job-volume")  # what Volume.ephemeral() yields needs a server to make
    args = ex.sandbox_args(job, own)
    accepted = inspect.signature(modal.Sandbox.create).parameters
    assert set(args) <= set(accepted), set(args) - set(accepted)
    assert isinstance(args["image"], modal.Image) and isinstance(args["app"], modal.App)
    import importlib.metadata

    steps = dockerfile(args["image"])
    assert steps[0].startswith(f"FROM python:{sys.version_info.major}.{sys.version_info.minor}")
    numpy, tenacity = (importlib.metadata.version(n) for n in ("numpy", "tenacity"))
    assert f"RUN python -m pip install numpy=={numpy} tenacity=={tenacity}" in steps
    assert any(s.startswith("RUN python -m pip install torch==") and s.endswith("--no-deps") for s in steps)
    assert args["gpu"] == "A100-80GB" and args["block_network"] is True and args["timeout"] == 700
    assert set(args["volumes"]) == {DATA_MOUNT, PRIVATE_MOUNT}
    assert all(isinstance(v, modal.Volume) for v in args["volumes"].values())
    ephemeral = inspect.signature(modal.Volume.ephemeral).parameters.values()  # called with no arguments
    assert all(p.default is not p.empty for p in ephemeral if p.name != "cls") and callable(own.batch_upload)
    ex.cfg.gpu = None  # no executor setting: the task's resources.gpu_type, else A100
    assert ex.sandbox_args(make_job(tmp_path, "", name="l4", gpus=2, gpu_type="L4"))["gpu"] == "L4:2"
    assert ex.sandbox_args(make_job(tmp_path, "", name="any", gpus=1))["gpu"] == "A100"
    assert set(args["tags"]) == {RUN_TAG, "researchbench-job", "image"}
    assert all(isinstance(v, str) for v in args["tags"].values())
    ex._local.shutdown()
    ex._pool.shutdown()


def test_image_spec_pins_local_versions() -> None:
    import importlib.metadata

    numpy = importlib.metadata.version("numpy")
    spec = image_spec((Requirement("numpy>=1.25"), Requirement("numpy<1.0"), Requirement("no-such-pkg-xyz>=1"),
                       Requirement("torch", no_deps=True)), python_version="3.11")
    assert spec.packages == (f"numpy=={numpy}", "numpy<1.0", "no-such-pkg-xyz>=1")
    assert spec.no_deps == (pin("torch"),) and "+" not in pin("torch")
    assert spec.key == image_spec((Requirement("numpy>=1.25"), Requirement("numpy<1.0"),
                                   Requirement("no-such-pkg-xyz>=1"), Requirement("torch", no_deps=True)),
                                  python_version="3.11").key
    assert spec.key != image_spec((), python_version="3.11").key


@pytest.mark.parametrize("configured, count, expected", [
    (None, 0, None), ("H100", 0, None), (None, 1, "A100"), ("H100", 2, "H100:2"), ("H100:4", 1, "H100:4"),
])
def test_gpu_string(configured, count, expected) -> None:
    assert gpu_string(configured, count) == expected


def test_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_modal_credentials: None) -> None:
    assert "modal token new" in modal_credentials_problem()
    with pytest.raises(UserError, match="modal token new"):
        ModalExecutor(ModalExecutorConfig())
    config = tmp_path / "modal.toml"
    config.write_text('[me]\ntoken_id = "ak-1"\ntoken_secret = "as-1"\nactive = true\n')
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(config))
    assert modal_credentials_problem() == ""


# -- a whole run on the stand-in: the engine, the K-in-flight scheduler, the local evaluator ---------


@needs_bwrap
def test_run_on_modal_scores_locally_and_never_uploads_labels(toy, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from researchbench.benchmark.executors.modal import backend as modal_backend
    from conftest import journal_records, run_inprocess

    clients: list[StandInModal] = []

    def client() -> StandInModal:
        clients.append(StandInModal(tmp_path / f"standin{len(clients)}", BWRAP))
        return clients[-1]  # Modal failing mid-run aborts it: tests/run/test_outage.py

    monkeypatch.setattr(modal_backend, "modal_client", client)
    overrides = ("agent=optuna", "task=toy", f"results_dir={tmp_path / 'results'}", "budget.steps=3",
                 "executor=modal", f"executor.remote_python={sys.executable}", "parallel=2")
    summary, out = run_inprocess(*overrides)
    assert summary["status"] == "finished" and summary["sandbox"] == "modal", out
    assert summary["baseline"]["val"] == 5.0 and summary["baseline"]["test"] == 20.0
    assert summary["best"]["test"] is not None
    standin = clients[-1]
    final_tests = 1 if summary["best"]["node"] == "0000" else 2
    assert len(standin.sandboxes) == 1 + 3 + final_tests  # baseline, experiments, final tests
    assert all(sb.terminated for sb in standin.sandboxes)
    labels = toy.labels_dir
    secrets = {p.read_bytes() for p in labels.rglob("*") if p.is_file()}
    uploaded = [p for p in (tmp_path / "standin0").rglob("*") if p.is_file() and not p.is_symlink()]
    assert uploaded and not any(p.read_bytes() in secrets for p in uploaded), "labels reached the sandbox"
    assert not any(str(labels) in " ".join(e) for sb in standin.sandboxes for e in sb.execs)
    # per phase: only the final tests mount a Volume of their own (the test inputs), deleted after them
    private = [sb for sb in standin.sandboxes if PRIVATE_MOUNT in sb.kwargs.get("volumes", {})]
    assert len(private) == final_tests and len(standin.ephemeral) == final_tests
    assert all(v.deleted for v in standin.ephemeral)
    assert all(set(sb.kwargs["volumes"]) == {DATA_MOUNT} for sb in standin.sandboxes if sb not in private)
    hidden_inputs = {p.read_bytes() for p in toy.test_inputs_dir.rglob("*") if p.is_file()}
    shared = standin.volumes["researchbench-data"].dir
    assert hidden_inputs and not any(p.read_bytes() in hidden_inputs for p in shared.rglob("*") if p.is_file())
    tags = {sb.kwargs["tags"]["researchbench-run"] for sb in standin.sandboxes}
    assert len(tags) == 1
    # the same command again: a finished run is a no-op and creates no sandbox
    summary2, out2 = run_inprocess(*overrides)
    assert "nothing to do" in out2 and not clients[-1].sandboxes
    assert [r["kind"] for r in journal_records(Path(summary["run_dir"]))].count("final") == 1


@needs_bwrap
def test_agent_code_runs_unprivileged_and_cannot_touch_harness_files(tmp_path: Path) -> None:
    ex, _ = standin_executor(tmp_path / "standin")
    job = make_job(tmp_path, ATTEMPT_SOURCE + textwrap.dedent("""
        def replace():
            open("evil.py", "w").write("print('replaced')")
            os.replace("evil.py", "driver.py")
        print(json.dumps({
            "uid": os.getuid(),
            "write": attempt(lambda: open("driver.py", "a").write("# edited")),
            "replace": attempt(replace),
            "remove": attempt(lambda: os.remove("driver.py")),
            "new_file": attempt(lambda: open("notes.txt", "w").write("mine")),
        }))
    """))
    (job.workdir / "driver.py").write_text("print('the harness driver')\n")
    job = Job(**{**job.__dict__, "readonly": (job.workdir / "driver.py",)})
    try:
        result, out, err = run(ex, job)
    finally:
        ex.shutdown()
    assert result.ok, err
    seen = json.loads(out)
    assert seen["uid"] == 65534
    assert seen["write"] != "ALLOWED" and seen["replace"] != "ALLOWED" and seen["remove"] != "ALLOWED"
    assert seen["new_file"] == "ALLOWED"
    assert (job.workdir / "driver.py").read_text() == "print('the harness driver')\n"
    assert (job.workdir / "notes.txt").read_text() == "mine"  # the code dir came back


def test_downloads_are_parsed_as_hostile(tmp_path: Path) -> None:
    """What comes back from a sandbox: only regular files and dirs under the requested roots."""
    import io
    import tarfile

    from researchbench.benchmark.executors.remote_files import MAX_DEPTH, unpack

    root = tmp_path / "out"
    root.mkdir()
    outside = tmp_path / "outside.txt"
    rel = str(root).lstrip("/")

    def archive(*members: tuple[str, bytes | None, bytes]) -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for name, link_type, data in members:
                info = tarfile.TarInfo(name)
                if link_type is not None:
                    info.type, info.linkname = link_type, data.decode()
                    tar.addfile(info)
                else:
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        return buffer.getvalue()

    data = archive(
        (f"{rel}/pred.json", None, b"[1, 2]"),
        (f"{rel}/link", tarfile.SYMTYPE, str(outside).encode()),
        (f"{rel}/link/through.txt", None, b"via the link"),
        (f"{rel}/hard", tarfile.LNKTYPE, f"{rel}/pred.json".encode()),
        (f"{rel}/fifo", tarfile.FIFOTYPE, b""),
        (f"{rel}/../outside.txt", None, b"escaped"),
        (str(outside).lstrip("/"), None, b"escaped"),
    )
    result = unpack(data, [root])
    assert not result.violation and result.files == 2 and result.skipped == 5
    assert sorted(p.name for p in root.iterdir()) == ["link", "pred.json"]
    assert not (root / "link").is_symlink() and (root / "link" / "through.txt").read_bytes() == b"via the link"
    assert (root / "pred.json").read_bytes() == b"[1, 2]" and not outside.exists()
    away = tmp_path / "away"
    away.mkdir()
    (root / "evil").symlink_to(away)  # a link already on the host is never written through
    assert unpack(archive((f"{rel}/evil/x", None, b"no")), [root]).skipped == 1 and not (away / "x").exists()
    deep = "/".join(["d"] * (MAX_DEPTH + 2))
    assert "deeper" in unpack(archive((f"{rel}/{deep}/x", None, b"")), [root]).violation
    assert "unreadable" in unpack(b"not a tar" * 100, [root]).violation


@pytest.mark.parametrize("command", [
    ("agent=optuna", "task=toy", "executor=modal"),
    ("-m", "hydra/launcher=modal", "agent=optuna", "task=toy", "seed=0,1"),
])
def test_rejected_or_unreachable_credentials_fail_fast_with_one_line(toy, tmp_path: Path, command: tuple[str, ...],
                                                                      no_modal_credentials: None) -> None:
    """A fake token against a server that never answers: Modal's client would retry for a minute or more;
    one bounded hello ends the command first, before any job or run dir, with a line naming the fix."""
    import socket

    from conftest import run_cli

    with socket.socket() as silent:  # accepts connections and never answers, like a hung API
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        env = {"MODAL_TOKEN_ID": "ak-fake", "MODAL_TOKEN_SECRET": "as-fake",
               "MODAL_SERVER_URL": f"http://127.0.0.1:{silent.getsockname()[1]}"}
        proc = run_cli(*command, f"results_dir={tmp_path / 'results'}", env=env)
    who = "hydra/launcher=modal" if "-m" in command else "executor=modal"
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {who}: Modal credentials rejected or unreachable (no answer in 5 s): run `modal token new` "
        "(or set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET), and check the network"], proc.stderr
    assert not list(tmp_path.rglob("journal.jsonl"))


def test_a_rejected_token_is_named_in_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """What Modal answers a bad token with (AuthError) reaches the user's line, first line only."""
    from types import SimpleNamespace

    import modal
    from modal.exception import AuthError

    from researchbench.benchmark.executors.modal.image import modal_unreachable_problem

    async def reject(server_url: str, credentials: tuple[str, str]) -> None:
        assert credentials == ("ak-fake", "as-fake")
        raise AuthError("Token ID is malformed.\nmore detail")

    monkeypatch.setenv("MODAL_TOKEN_ID", "ak-fake")
    monkeypatch.setenv("MODAL_TOKEN_SECRET", "as-fake")
    monkeypatch.setattr(modal.Client, "verify", SimpleNamespace(aio=reject))
    assert modal_unreachable_problem(modal, "executor=modal") == (
        "executor=modal: Modal credentials rejected or unreachable (AuthError: Token ID is malformed.): "
        "run `modal token new` (or set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET), and check the network")


@needs_bwrap
def test_the_manifests_gpu_need_reaches_sandbox_create(toy, tmp_path: Path) -> None:
    """resources.gpus and resources.gpu_type (or executor.gpu) become the `gpu=` of the Sandbox.create call
    the phase job's sandbox is made with; the job itself sees its GPUs and learns why its limit is wall-clock."""
    import dataclasses

    from researchbench.benchmark.executors.modal.backend import MODAL_WALL_WHY
    from researchbench.benchmark.run.experiment import materialize, phase_job
    from researchbench.benchmark.tasks.manifest import Resources

    spec = dataclasses.replace(toy.spec, resources=Resources(gpus=2, gpu_type="A100-80GB", cpus=1, memory_gb=2,
                                                             disk_gb=0.05))
    prepared = dataclasses.replace(toy, spec=spec)
    scratch = tmp_path / "scratch" / "0001"
    (scratch / "output").mkdir(parents=True)
    owned = materialize(prepared, {}, scratch / "code")
    job = dataclasses.replace(phase_job(prepared, "val", scratch, 60.0, owned),
                              argv=(sys.executable, "-c", "import os; print(os.environ['CUDA_VISIBLE_DEVICES'])"))
    assert job.gpus == 2 and job.gpu_type == "A100-80GB"
    ex, client = standin_executor(tmp_path / "standin")
    try:
        result, out, err = run(ex, job)
        assert ex.sandbox_args(dataclasses.replace(job, gpus=0))["gpu"] is None  # a CPU task asks for no GPU
        ex.cfg.gpu = "H100"  # executor.gpu overrides the task's type, keeps its count
        assert ex.sandbox_args(job)["gpu"] == "H100:2"
    finally:
        ex.shutdown()
    assert result.ok and out.strip() == "0,1", err
    assert [sb.kwargs["gpu"] for sb in client.sandboxes] == ["A100-80GB:2"]
    assert result.clock == "wall" and result.time_limit(60.0)["why"] == MODAL_WALL_WHY
