"""Agent text is inert (issue 17, section 3), and a job's metrics and output are sanitized and capped
before they reach the journal, the prompt and the report (section 5).

The attacks run through the real loop: a ReAct run from the CLI whose scripted replies, plan and job
output carry terminal escapes, a NUL, Rich markup and a spreadsheet formula, then the scorer over its
results; and a hostile evaluation (huge output full of ESC bytes, ten thousand metrics, a 1 MB metric
name) through the real local executor and evaluator path.
"""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pandas as pd

from researchbench.benchmark.common.inert_text import (JOB_OUTPUT_BYTES, MAX_METRICS, METRIC_NAME, csv_safe, inert,
                                                       install_log_filter, job_output)
from researchbench.benchmark.executors.local import LocalExecutor, LocalExecutorConfig
from researchbench.benchmark.records.journal import OK, BlobStore, Journal, Node
from researchbench.benchmark.records.kinds import Checkpoint, Finished
from researchbench.benchmark.run.display import Display, RichDisplay, Stats
from conftest import MetricsAddedAfterEvaluation, journal_records, run_cli

TITLE = "\x1b]0;pwned title\x07"
CLEAR = "\x1b[2J"
LINK = "[link=file:///etc/passwd]x[/link]"
FORMULA = "=cmd|' /C calc'!A0"
HOSTILE = f"{FORMULA} {TITLE}{CLEAR}nul\x00here [bold]{LINK}\u202eevil"
RAW = ("\x1b", "\x00", "\x07", "\u202e")  # no sink may hold these raw
# model.py of the hostile experiment: prints the hostile text (and a C1 CSI) on both streams at import
HOSTILE_MODEL = (f"import sys\nprint({HOSTILE!r} + '\\x9b31m')\nprint({HOSTILE!r}, file=sys.stderr)\n\n"
                 "def predict(x, params):\n    return params['slope'] * x\n")


def _act(**fields) -> str:
    return json.dumps({"reasoning": "because", **fields})


def _assert_inert(text: str, where: str) -> None:
    found = [repr(c) for c in RAW if c in text]
    assert not found, f"{where} holds {found} raw"


def test_inert_removes_terminal_control_and_keeps_text() -> None:
    assert inert(HOSTILE) == f"{FORMULA} nulhere [bold]{LINK}evil"
    assert inert("a\r\nb\tc\u2028d") == "a\nb\tc\nd"
    assert inert("a\n\tb  c\x1b[31m", multiline=False) == "a b c"
    assert inert("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x9b2J\x1bc") == "link "  # OSC 8, C1 CSI, ESC c
    assert inert(None) == ""


def test_job_output_is_capped_and_keeps_what_a_terminal_shows() -> None:
    assert job_output(b"epoch 1\r 10%\r 100%\n\x1b[32mdone\x1b[0m\r\n") == " 100%\ndone\n"
    big = job_output(b"head" + b"x" * 5_000_000 + b"tail")
    assert len(big.encode()) <= JOB_OUTPUT_BYTES + 100 and big.startswith("head") and big.endswith("tail")
    assert "bytes of output cut" in big


def test_csv_cells_cannot_run_as_formulas() -> None:
    df = pd.DataFrame({"plan": [FORMULA, "+1+1", "@SUM(A1)", "-x", "\tx", "ok", "-0.25"], "score": range(7)},
                      index=pd.Index(["=a", "b", "c", "d", "e", "f", "g"], name="agent"))
    safe = csv_safe(df)
    assert list(safe["plan"]) == ["'" + FORMULA, "'+1+1", "'@SUM(A1)", "'-x", "'\tx", "ok", "-0.25"]
    assert list(safe.index) == ["'=a", *"bcdefg"] and list(safe["score"]) == list(range(7))
    assert list(df["plan"])[0] == FORMULA  # the caller's frame is left as it was


def test_rich_live_view_never_interprets_markup_or_escapes() -> None:
    from rich.console import Console

    out = io.StringIO()
    display = RichDisplay(Console(file=out, force_terminal=True, color_system="truecolor", width=400))
    display.attach(lambda: Stats(experiments=1, budget=2, best="n/a", tokens=0, usd=None))
    display.job("0001", HOSTILE, HOSTILE)
    display.console.print(display.renderable())
    display.line(HOSTILE)
    shown = out.getvalue()
    assert LINK in shown and "[bold]" in shown  # literal text, not a hyperlink or a style
    assert "\x1b]" not in shown and CLEAR not in shown and "\x00" not in shown and "\x07" not in shown


def test_log_records_are_inert() -> None:
    """What the harness logs quotes hostile text (an evaluator's stderr, an agent's command, a crashed
    operator's exception): the filter a run installs makes the message and the traceback inert."""
    stream = io.StringIO()
    logger = logging.getLogger("test_inert_text")
    logger.propagate = False
    logger.addHandler(logging.StreamHandler(stream))
    install_log_filter(logger)
    install_log_filter(logger)  # idempotent: one filter per handler
    assert len(logger.handlers[0].filters) == 1
    try:
        raise ValueError(HOSTILE)
    except ValueError as exc:
        logger.error("job %s failed", HOSTILE, exc_info=exc)
    text = stream.getvalue()
    _assert_inert(text, "the log")
    assert f"job {inert(HOSTILE)} failed" in text and f"ValueError: {inert(HOSTILE)}" in text


def test_hostile_react_run_leaves_terminal_report_and_csv_inert(toy, tmp_path: Path) -> None:
    script = tmp_path / "hostile.jsonl"
    replies = [_act(reasoning=f"{FORMULA} {HOSTILE}", files_to_write={"model.py": HOSTILE_MODEL}, submit_eval=True),
               _act(reasoning=HOSTILE, done=True, done_reason=HOSTILE)]
    script.write_text("".join(json.dumps({"reply": r, "operator": "react"}) + "\n" for r in replies))
    results = tmp_path / "results"
    proc = run_cli("agent=react", "task=toy", "budget.steps=3", f"results_dir={results}", "llm=scripted",
                   f"llm.script={script}")
    assert proc.returncode == 0, proc.stderr
    _assert_inert(proc.stdout + proc.stderr, "the run's terminal output")
    assert "the agent declared done: =cmd|' /C calc'!A0 nulhere [bold][link" in proc.stdout  # one readable line
    (run_dir,) = (results / "react" / "toy").iterdir()
    nodes = [r["node"] for r in journal_records(run_dir) if r["kind"] == "finished"]
    assert nodes[1]["status"] == OK and nodes[1]["plan"].startswith(FORMULA)  # the journal keeps what was said
    blobs = BlobStore(run_dir / "blobs")
    for stream in ("stdout", "stderr"):  # the job's output is stored inert: the prompt and report read it
        text = blobs.text(nodes[1][stream])
        assert "nulhere [bold]" in text
        _assert_inert(text, f"the stored {stream}")
    _assert_inert((run_dir / "report.html").read_text(), "report.html")

    out = tmp_path / "scores"
    scored = run_cli(str(results), "--out", str(out), "--no-embeddings", "--no-plots", script="compute_agent_metrics.py")
    assert scored.returncode == 0, scored.stderr
    _assert_inert(scored.stdout + scored.stderr, "the scorer's terminal output")
    for page in [out / "report.html", *(out / "runs").glob("*.html")]:
        text = page.read_text()
        _assert_inert(text, page.name)
    for path in [out / "tables.md", *out.glob("*.csv")]:
        text = path.read_text()
        _assert_inert(text, path.name)
        assert FORMULA not in text or f"'{FORMULA}" in text, path.name
        if path.suffix == ".csv":
            cells = pd.read_csv(path, dtype=str, keep_default_na=False).to_numpy().ravel()
            assert not [c for c in cells if c[:1] in ("=", "+", "@") and not _number(c)], path.name


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _execute(toy, tmp_path: Path, model: str, long_name: int) -> tuple[Node, BlobStore]:
    """One experiment of the toy task with this model.py, through StepRunner and the real executor."""
    from researchbench.benchmark.run.worker import StepRunner

    spec = toy.spec
    blobs = BlobStore(tmp_path / "blobs")
    with LocalExecutor(LocalExecutorConfig()) as real:
        hostile = {**{f"m{i}": i / 7 for i in range(10_000)}, "n" * long_name: 1.0, f"a{CLEAR}b": 2.0,
                   "[bold]x": 3.0, "s": "1.0", "t": True, "big": 10**400, "nan": float("nan"), "list": [1]}
        runner = StepRunner(toy, MetricsAddedAfterEvaluation(real, hostile), blobs, spec.budget, tmp_path / "scratch",
                            Display(echo=lambda line: None, quiet=True))
        node = Node(id="0001", step=1, operator="improve")
        files = {rel: data.decode() for rel, data in toy.baseline_files().items() if spec.is_editable(rel)}
        runner.execute(node, {**files, "model.py": model}, files)
    return node, blobs


def test_hostile_job_output_and_metrics_are_sanitized_and_capped(toy, tmp_path: Path) -> None:
    from researchbench.agents.kit.prompts import metrics_line

    spec = toy.spec
    noisy = ("import sys\nsys.stdout.write(('\\x1b[2J\\x1b]0;t\\x07\\x00' + 'x' * 1000 + '\\n') * 4000)\n"
             "sys.stderr.write('\\x1b[31m' * 300000)\n"
             "def predict(x, params):\n    return params['slope'] * x\n")
    node, blobs = _execute(toy, tmp_path, noisy, long_name=600_000)
    assert node.status == OK and node.primary is not None and spec.metric.name in node.metrics
    assert len(node.metrics) == MAX_METRICS and all(METRIC_NAME.fullmatch(k) for k in node.metrics)
    assert all(isinstance(v, float) for v in node.metrics.values())
    assert "left out 3 metric(s) whose values are not numbers" in node.feedback
    assert "left out 3 metric(s) whose names are not" in node.feedback
    assert f"left out {10_000 + 1 - MAX_METRICS} metric(s) over the cap" in node.feedback  # m0..m9999 and mse
    assert "big=inf, nan=nan" in node.feedback
    stdout, stderr = blobs.get(node.stdout), blobs.get(node.stderr)
    assert len(stdout) <= JOB_OUTPUT_BYTES + 100 and b"bytes of output cut" in stdout
    assert b"\x1b" not in stderr and len(stderr) < 100  # nothing but escape sequences, and the cut's marker
    for text in (stdout.decode(), node.feedback, metrics_line(node)):
        _assert_inert(text, "the node")
    assert len(metrics_line(node)) < 20_000  # what a prompt shows of the metrics stays bounded
    journal = Journal(tmp_path / "journal.jsonl")
    journal.append(Finished(node, Checkpoint(policy=None, counters={}, usage={})))
    assert (tmp_path / "journal.jsonl").stat().st_size < 64_000


def test_a_metrics_file_over_its_read_cap_makes_the_step_invalid(toy, tmp_path: Path) -> None:
    """A 1 MB metric name puts metrics.json over the 1 MiB the harness reads: the step is invalid with a
    one-line reason, and nothing of the file reaches the node."""
    node, _ = _execute(toy, tmp_path, HOSTILE_MODEL, long_name=1_000_000)
    assert node.status == "buggy" and node.metrics == {} and node.primary is None
    assert node.bug_reason.startswith("the evaluator wrote no usable metrics (metrics.json is")


def test_an_unterminated_escape_string_cannot_hide_later_lines() -> None:
    assert inert("ok\x1b]0;never ends\nTraceback: the real error\n") == "ok\nTraceback: the real error\n"
