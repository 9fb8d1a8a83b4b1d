"""`python setup.py --check`: a good task passes every check; each way a task can be broken fails the
check named for it. The task is `tests/fixtures/check_tasks/line` (standard library only, fast),
copied into a temp dir and broken one thing at a time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from researchbench.benchmark.authoring.task_check import FAIL, PASS, SKIP, WARN, check_task
from tests.conftest import FIXTURES, run_cli

LINE = FIXTURES / "check_tasks" / "line"
# The baseline's recorded test score (every seed): its line through the origin, exactly as the evaluator prints it.
TEST_MSE = yaml.safe_load((LINE / "task.yaml").read_text())["baseline"]["test"][0]
# Checks the negative tests do not need: they are the slow or unrelated ones.
ONLY_PHASES = ("label-probe", "prepare-deterministic")


def copy_task(tmp_path: Path, name: str = "line") -> Path:
    dest = tmp_path / "tasks" / name
    shutil.copytree(LINE, dest)
    return dest


def edit_manifest(task: Path, **changes) -> None:
    raw = yaml.safe_load((task / "task.yaml").read_text())
    for dotted, value in changes.items():
        node = raw
        *parents, leaf = dotted.split("__")
        for key in parents:
            node = node[key]
        node[leaf] = value
    (task / "task.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def statuses(report) -> dict[str, str]:
    return {row.name: row.status for row in report.rows}


def test_good_task_passes_every_check_through_the_cli(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    result = run_cli("--check", "line", "--skip-requirements", script="setup.py",
                     env={"RESEARCHBENCH_TASKS_PATH": str(task), "RESEARCHBENCH_WORKSPACE": str(tmp_path / "ws")})
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {line.split()[0]: line.split()[1] for line in result.stdout.splitlines()
            if line.startswith("  ") and len(line.split()) > 1}
    expected = {"manifest", "description", "editable", "prepare", "prepare-deterministic", "isolation", "label-probe",
                "baseline-val", "determinism", "baseline-test", "baseline-record", "target-spread",
                "trivial:checks/mean"}
    assert set(rows) == expected and set(rows.values()) == {PASS}, result.stdout
    assert "line: 13 passed, 0 failed, 0 skipped in" in result.stdout and "all checks passed" in result.stdout
    assert "walked" in result.stdout  # the probe really walked the sandbox
    assert (tmp_path / "ws" / "line" / ".checksums.json").is_file()  # --check also prepares


def test_trivial_predictor_beating_the_floor_fails(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    edit_manifest(task, metric__floor=40.0)  # the training mean scores 32 on val: it beats 40
    report = check_task(task, root=tmp_path / "ws", skip=ONLY_PHASES)
    assert statuses(report)["trivial:checks/mean"] == FAIL and report.failed == ["trivial:checks/mean"]
    row = next(r for r in report.rows if r.name == "trivial:checks/mean")
    assert "beats the floor 40 on val" in row.detail and "32" in row.detail


def test_trivial_overlay_must_hold_only_editable_files(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    (task / "checks" / "mean" / "driver.py").write_text("print('replaced driver')\n")
    report = check_task(task, root=tmp_path / "ws", skip=ONLY_PHASES + ("determinism",))
    row = next(r for r in report.rows if r.name == "trivial:checks/mean")
    assert row.status == FAIL and "driver.py is not an editable file" in row.detail


def test_a_task_without_trivial_overlays_fails(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    edit_manifest(task, checks={"trivial": []})
    report = check_task(task, root=tmp_path / "ws", skip=ONLY_PHASES + ("determinism",))
    assert report.failed == ["trivial"]


def test_copies_of_hidden_files_fail_the_probe(tmp_path: Path) -> None:
    """A prepare that leaves a copy of the val labels (under another name) in the public data, and a
    test-input file shipped in the baseline code folder (the val phase sees its code folder)."""
    task = copy_task(tmp_path)
    with open(task / "prepare.py", "a") as fh:
        fh.write('(root / "data/notes.json").write_bytes((root / "labels/val_y.json").read_bytes())\n')
    (task / "baseline" / "cache.json").write_text("[1.5, 3.5, 5.5, 7.5, 10.5]")  # the bytes prepare writes
    report = check_task(task, root=tmp_path / "ws", skip=("prepare-deterministic", "determinism", "trivial"))
    assert report.failed == ["label-probe"], report.table()
    row = next(r for r in report.rows if r.name == "label-probe")
    assert "data/notes.json has the bytes of the hidden file labels/val_y.json" in row.detail
    assert "code/cache.json has the bytes of the hidden file test_inputs/test_x.json" in row.detail


def test_non_deterministic_baseline_fails(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    model = task / "baseline" / "model.py"
    model.write_text(model.read_text().replace(
        "    return [slope * x for x in xs]",
        "    import random\n    noise = random.SystemRandom().random() * 0.1 + 0.01  # not seeded: differs every run\n"
        "    return [slope * x + noise for x in xs]"))
    report = check_task(task, root=tmp_path / "ws", skip=ONLY_PHASES + ("trivial",))
    st = statuses(report)
    assert st["determinism"] == FAIL and st["baseline-val"] == PASS
    row = next(r for r in report.rows if r.name == "determinism")
    assert "two val runs with seed 0 differ in mse" in row.detail
    assert st["baseline-record"] == FAIL  # the noisy baseline does not reproduce the record


def test_stale_baseline_record_fails_and_missing_record_is_skipped(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    edit_manifest(task, baseline={"seeds": [5], "val": [0.0], "test": [1.5]})
    report = check_task(task, root=tmp_path / "ws", skip=ONLY_PHASES + ("determinism", "trivial"))
    row = next(r for r in report.rows if r.name == "baseline-record")
    assert row.status == FAIL and "seed 5 does not reproduce" in row.detail
    assert f"test reproduced {TEST_MSE!r}, recorded 1.5 (relative difference 0.8311, tolerance 0.0001)" in row.detail
    assert "seed 5" in next(r for r in report.rows if r.name == "baseline-val").detail  # runs with the record's seed

    edit_manifest(task, baseline=None)
    report = check_task(task, root=tmp_path / "ws", skip=ONLY_PHASES + ("determinism", "trivial"))
    row = next(r for r in report.rows if r.name == "baseline-record")
    assert row.status == SKIP and "no baseline record" in row.detail and report.ok


def test_failing_baseline_and_bad_manifest_name_the_check(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    (task / "baseline" / "model.py").write_text("def fit_predict(train, xs, seed):\n    raise SystemExit(3)\n")
    report = check_task(task, root=tmp_path / "ws", skip=ONLY_PHASES)
    st = statuses(report)
    assert st["baseline-val"] == FAIL and st["baseline-test"] == FAIL and st["determinism"] == SKIP
    assert "exit code 3" in next(r for r in report.rows if r.name == "baseline-val").detail

    edit_manifest(task, metric__direction="sideways")
    report = check_task(task, root=tmp_path / "ws")
    assert report.failed == ["manifest"] and all(r.status == SKIP for r in report.rows[1:])


def test_description_must_name_the_metric(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    (task / "description.md").write_text("Predict y for each x.\n")
    report = check_task(task, root=tmp_path / "ws", skip=ONLY_PHASES + ("determinism", "trivial"))
    assert report.failed == ["description"]


@pytest.mark.parametrize("globs", [["*.py"], ["model.py", "task_runtime/*"], ["sitecustomize.py"]])
def test_an_editable_glob_that_lets_agent_code_shadow_the_runtime_fails(tmp_path: Path, globs: list[str]) -> None:
    """Issue 26: the code dir comes first on a driver's sys.path, so an editable `task_runtime.py` (or
    package, or sitecustomize.py) would replace the harness's runtime inside the driver."""
    task = copy_task(tmp_path)
    edit_manifest(task, editable=globs)
    report = check_task(task, root=tmp_path / "ws", skip=ONLY_PHASES + ("determinism", "trivial"))
    row = next(r for r in report.rows if r.name == "editable")
    assert report.failed == ["editable"] and "which the driver would import instead of the harness's" in row.detail


def test_cli_exit_codes_and_failing_checks_named(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    edit_manifest(task, metric__floor=40.0)
    env = {"RESEARCHBENCH_TASKS_PATH": str(task.parent), "RESEARCHBENCH_WORKSPACE": str(tmp_path / "ws")}
    result = run_cli("--check", "line", "--skip-requirements", script="setup.py", env=env)
    assert result.returncode == 1
    # one line; a harness before it may also report tidying up job cgroups a killed harness left behind
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("removing job cgroup")]
    assert lines == ["check failed: line (trivial:checks/mean)"]

    unknown = run_cli("--check", "nope", script="setup.py", env=env)
    assert unknown.returncode == 2 and "unknown task 'nope'" in unknown.stderr and "Traceback" not in unknown.stderr
    nothing = run_cli("--check", script="setup.py", env=env)
    assert nothing.returncode == 2 and nothing.stderr.startswith("error: --check needs task names")


def test_probe_reports_a_visible_label_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bypass the harness's own exposure check: bind the labels into the val phase and let the probe see them."""
    from researchbench.benchmark.authoring.task_check import probe_val_phase
    from researchbench.benchmark.executors.local import LocalExecutor
    from researchbench.benchmark.run import experiment
    from researchbench.benchmark.tasks.manifest import load_task
    from researchbench.benchmark.tasks.workspace import prepare

    prepared = prepare(load_task(copy_task(tmp_path)), root=tmp_path / "ws", log=lambda _: None)
    real_phase_job = experiment.phase_job

    def leaky_phase_job(prepared_, phase, scratch, timeout_s, owned=(), seed=0):
        job = real_phase_job(prepared_, phase, scratch, timeout_s, owned, seed)
        return type(job)(**{**job.__dict__, "readonly": (*job.readonly, prepared_.labels_dir), "hidden": ()})

    monkeypatch.setattr("researchbench.benchmark.authoring.task_check.phase_job", leaky_phase_job)
    with LocalExecutor() as executor:
        report = probe_val_phase(prepared, executor, tmp_path / "scratch")
    assert f"{prepared.labels_dir} is visible" in report["findings"]


def test_slow_baseline_val_fails(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    report = check_task(task, root=tmp_path / "ws", skip=ONLY_PHASES + ("determinism", "trivial", "baseline-test"),
                        val_seconds_limit=0.0)
    row = next(r for r in report.rows if r.name == "baseline-val")
    assert row.status == FAIL and "CPU s, over the 0 s a baseline val phase may take" in row.detail, row.detail


def test_a_tie_break_the_evaluator_does_not_report_fails_baseline_val(tmp_path: Path) -> None:
    """A misspelled `metric.tie_breaks` name would rank nothing, silently: the check names it and what is reported."""
    task = copy_task(tmp_path)
    edit_manifest(task, metric__tie_breaks={"mae": "lower"})
    report = check_task(task, root=tmp_path / "ws", skip=ONLY_PHASES + ("determinism", "trivial", "baseline-test"))
    row = next(r for r in report.rows if r.name == "baseline-val")
    assert row.status == FAIL and "names mae, which the evaluator does not report (it reports mse)" in row.detail


def test_reference_check_runs_only_when_asked_and_needs_the_target_on_every_seed(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    skip = ONLY_PHASES + ("isolation", "baseline-val", "baseline-test", "determinism", "trivial:checks/mean")
    # Not asked for: no reference row.
    assert "reference" not in statuses(check_task(task, root=tmp_path / "ws", skip=skip))
    # The fixture's reference fits the intercept the baseline leaves out: test mse 0 on seeds 0, 1, 2.
    report = check_task(task, root=tmp_path / "ws", skip=skip, reference=True)
    row = next(r for r in report.rows if r.name == "reference")
    assert row.status == PASS and "seed 2" in row.detail, row.detail
    # The training mean as a "reference" misses the target and the row names the scores.
    shutil.copy(task / "checks" / "mean" / "model.py", task / "reference" / "model.py")
    report = check_task(task, root=tmp_path / "ws", skip=skip, reference=True)
    row = next(r for r in report.rows if r.name == "reference")
    assert row.status == FAIL and "misses the target" in row.detail and "seed 0" in row.detail, row.detail
    # Where the target is an oracle agent code cannot run, the reference must reach checks.reference_score:
    # the baseline's line through the origin as the reference (test mse 0.253) misses 0.1 and reaches 0.5.
    shutil.copy(task / "baseline" / "model.py", task / "reference" / "model.py")
    for goal, status in ((0.1, FAIL), (0.5, PASS)):
        edit_manifest(task, checks__reference_score=goal)
        row = next(r for r in check_task(task, root=tmp_path / "ws", skip=skip, reference=True).rows
                   if r.name == "reference")
        assert row.status == status and f"reference score {goal:g}" in row.detail, row.detail
    # A manifest that names no reference fails the row, saying what to add.
    edit_manifest(task, checks={"trivial": ["checks/mean"]})
    report = check_task(task, root=tmp_path / "ws", skip=skip, reference=True)
    row = next(r for r in report.rows if r.name == "reference")
    assert row.status == FAIL and "checks.reference" in row.detail


def test_a_hand_rounded_record_fails_with_both_values_in_full_precision(tmp_path: Path) -> None:
    """The record must be the exact score. Rounded to 4 digits, val 0.2832409972299165 is 1.4e-4 off (over the
    tolerance) and fails, printing every digit of both values and what to do; test 0.2533240997229921 is
    0.95e-4 off and passes by luck of its digits, which is why records are copied, never rounded."""
    task = copy_task(tmp_path)
    edit_manifest(task, baseline={"seeds": [0], "val": [0.2832], "test": [0.2533]})
    report = check_task(task, root=tmp_path / "ws", skip=ONLY_PHASES + ("determinism", "trivial"))
    row = next(r for r in report.rows if r.name == "baseline-record")
    assert row.status == FAIL and report.failed == ["baseline-record"], report.table()
    assert ("val reproduced 0.2832409972299165, recorded 0.2832 (relative difference 0.0001447, tolerance 0.0001)"
            in row.detail), row.detail
    assert "test reproduced" not in row.detail
    assert "Record the reproduced values exactly as printed" in row.detail and "bumping its version" in row.detail


def test_target_within_the_baseline_seed_spread_warns_without_failing(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    skip = ONLY_PHASES + ("isolation", "baseline-val", "baseline-test", "determinism", "trivial:checks/mean")
    # The recorded baseline (test 0.253 on every seed) is far from the 0.01 target: the row passes.
    report = check_task(task, root=tmp_path / "ws", skip=skip)
    row = next(r for r in report.rows if r.name == "target-spread")
    assert row.status == PASS and "lies outside the baseline's seed spread" in row.detail, row.detail
    # Seeds 1 and 2 of the recorded baseline reach the 0.01 target: a warning, and the check still passes.
    edit_manifest(task, baseline={"seeds": [0, 1, 2], "val": [0.0] * 3, "test": [TEST_MSE, 0.0, 0.005]})
    report = check_task(task, root=tmp_path / "ws", skip=skip)
    row = next(r for r in report.rows if r.name == "target-spread")
    assert row.status == WARN and report.ok and report.warned == ["target-spread"], report.table()
    assert "the baseline reaches it on seeds 1, 2" in row.detail and "Headroom" in row.detail
    assert "1 warned (target-spread)" in report.table() and report.table().endswith(": ok")
    # No seed reaches a 0.45 target, but the seeds (0.5, 0.6, 0.7: mean 0.6, SD 0.1) straddle it within 2 SD.
    edit_manifest(task, metric__target=0.45, baseline={"seeds": [0, 1, 2], "val": [0.0] * 3, "test": [0.5, 0.6, 0.7]})
    row = next(r for r in check_task(task, root=tmp_path / "ws", skip=skip).rows if r.name == "target-spread")
    assert row.status == WARN and "within 2 SD of their mean" in row.detail and "SD 0.1" in row.detail, row.detail
    # 2.5 SD from the mean is outside the spread.
    edit_manifest(task, metric__target=0.35)
    row = next(r for r in check_task(task, root=tmp_path / "ws", skip=skip).rows if r.name == "target-spread")
    assert row.status == PASS, row.detail
    # Without a record there is nothing to compare.
    edit_manifest(task, baseline=None)
    row = next(r for r in check_task(task, root=tmp_path / "ws", skip=skip).rows if r.name == "target-spread")
    assert row.status == SKIP
