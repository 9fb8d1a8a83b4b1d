"""What a person looks at: the HTML reports opened in headless Chromium (screenshot + DOM), hostile run
content shown as text and never run, and every finished run's own best_solution/ and report.html."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from researchbench.benchmark.scoring.export import export_run
from researchbench.benchmark.scoring.pipeline import Options, score
from conftest import FIXTURES, HANG_TIMEOUT_S, journal_records, run_cli, run_inprocess
from scoring_runs import write_run
from test_scoring import golden_steps

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed "
                                                              "(apt-get install -y chromium)")
XSS = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"


def chromium(tmp_path: Path, page: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'chrome-profile'}", *args, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


def hostile_run(root: Path) -> Path:
    steps = golden_steps()
    steps[1].stdout = f"epoch 1 {XSS}"
    steps[1].plan = f"plan </pre>{XSS}"
    steps[3].files = {"model.py": f"a = 4  # {XSS}\n", "../escape.py": "outside", "/etc/evil": "x"}
    steps[3].tokens, steps[3].usd = 10, 0.01
    return write_run(root, "aide", "toy", 0, steps, baseline_test=12.0, best_test=5.0, best_possible=0.0)


@needs_chromium
def test_run_report_shows_hostile_output_as_text_in_chromium(tmp_path: Path) -> None:
    run_dir = hostile_run(tmp_path / "results")
    best, report = export_run(run_dir)
    assert best == run_dir / "best_solution" and sorted(p.name for p in best.iterdir()) == ["README.md", "model.py"]
    assert (best / "model.py").read_text().startswith("a = 4")  # the best node's own file, links refused
    assert not (run_dir / "escape.py").exists() and not (tmp_path / "results" / "escape.py").exists()
    proc = chromium(tmp_path, report, "--dump-dom")
    dom = proc.stdout
    assert "<title>aide / toy / seed 0</title>" in dom, proc.stderr[-2000:]
    assert "pwned" not in dom.split("<body>")[0]  # the title was never changed by a script
    assert "<script" not in dom and "<img src=\"x\"" not in dom
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom  # shown as text
    assert 'id="node-0003"' in dom and "Search tree" in dom and "Best solution" in dom
    assert "improve 0003" in dom  # the prompt of the LLM call, from the blob store
    shot = tmp_path / "run.png"
    chromium(tmp_path, report, f"--screenshot={shot}", "--window-size=1100,1400")
    assert shot.stat().st_size > 5000


@needs_chromium
def test_comparison_report_in_chromium(tmp_path: Path) -> None:
    for agent, test in (("aide", 5.0), ("greedy", 8.0)):
        for seed in (0, 1):
            write_run(tmp_path / "results", agent, "toy", seed, golden_steps(), baseline_test=12.0, best_test=test)
    options = Options(results=tmp_path / "results", out=tmp_path / "out", embeddings=False,
                      compare=("aide", "greedy"))
    results = score(options, lambda line: None)
    assert results["paired"].iloc[0]["mean_diff"] == pytest.approx(3 / 20)
    page = tmp_path / "out" / "report.html"
    dom = chromium(tmp_path, page, "--dump-dom").stdout
    assert "Headline: clipped achievement" in dom and "Paired comparison" in dom and "performance profile" in dom
    assert dom.count('src="data:image/png;base64,') >= 2  # plots inline: the page opens offline
    assert "http://" not in dom and "https://" not in dom
    assert 'href="runs/0000.html"' in dom and (tmp_path / "out" / "runs" / "0000.html").exists()
    shot = tmp_path / "comparison.png"
    chromium(tmp_path, page, f"--screenshot={shot}", "--window-size=1300,1600")
    assert shot.stat().st_size > 20000
    assert (tmp_path / "out" / "tables.md").read_text().count("| aide") >= 2


def test_a_finished_run_exports_its_best_solution_and_report(toy, tmp_path: Path) -> None:
    summary, out = run_inprocess("agent=aide", "task=toy", "budget.steps=3", f"results_dir={tmp_path / 'results'}",
                                 "llm=scripted", f"llm.script={FIXTURES / 'scripts' / 'toy'}")
    run_dir = Path(summary["run_dir"])
    best_id = summary["best"]["node"]
    (best,) = [r["node"] for r in journal_records(run_dir) if r["kind"] == "finished" and r["node"]["id"] == best_id]
    exported = {p.name: p.read_text() for p in (run_dir / "best_solution").iterdir()}
    readme = exported.pop("README.md")
    assert exported == {rel: (run_dir / "blobs" / d[:2] / d[2:]).read_text() for rel, d in best["files"].items()}
    assert f"Node {best_id} ({best['operator']}" in readme and "1 file(s) changed (params.json)" in readme
    assert f"| this solution | {summary['best']['val']:.6g} | {summary['best']['test']:.6g} |" in readme
    assert f"| baseline | {summary['baseline']['val']:.6g} |" in readme and "-  \"slope\": 1.0" in readme
    # the README's re-run commands, run as a person would, reproduce the best node's val score
    rerun = readme.split("## How to re-run it")[1].split("```bash\n")[1].split("```")[0]
    proc = subprocess.run(["bash", "-e", "-c", rerun], cwd=tmp_path, capture_output=True, text=True,
                          timeout=HANG_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads((tmp_path / "work" / "out" / "metrics.json").read_text())
    assert metrics["metrics"][summary["metric"]["name"]] == pytest.approx(summary["best"]["val"])
    assert (run_dir / "report.html").exists() and "best solution:" in out
    assert summary["domain"] == "testing" and "best_possible" in summary["metric"]
    scored = run_cli(str(tmp_path / "results"), "--out", str(tmp_path / "report"), "--no-embeddings", "--no-plots",
                     "--suite", "lite", script="compute_agent_metrics.py")
    assert scored.returncode == 2 and "no scorable runs matching task=['causal_effect'," in scored.stderr
    scored = run_cli(str(tmp_path / "results"), "--out", str(tmp_path / "report"), "--no-embeddings", "--no-plots",
                     "--task", "toy", "--agent", "aide", script="compute_agent_metrics.py")
    assert scored.returncode == 0, scored.stderr
    assert len((tmp_path / "report" / "runs.csv").read_text().splitlines()) == 2  # header + one run
    assert "Headline: clipped achievement per task" in scored.stdout and "headline = FARBench" in scored.stdout


def _tree(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_scoring_writes_beside_the_results_never_into_runs_and_says_only_what_it_wrote(toy, tmp_path: Path) -> None:
    args = ("agent=greedy", "task=toy", "budget.steps=2", f"results_dir={tmp_path / 'results'}", "llm=scripted",
            f"llm.script={FIXTURES / 'scripts' / 'toy'}")
    summary, said = run_inprocess(*args)
    run_dir = Path(summary["run_dir"])
    # scripted replies cost nothing, and the console, summary and report page say so
    assert summary["budget"]["used"]["usd"] == 0 and summary["budget"]["used"]["offline_llm"] is True
    assert "LLM $0.0000 (offline LLM)" in said
    page = (run_dir / "report.html").read_text()
    assert "$0.0000 (offline LLM)" in page and "$0 (offline LLM)" in page  # the run's line and each call's
    before = _tree(run_dir)
    agent_dir = run_dir.parent
    scored = run_cli(str(agent_dir), "--no-embeddings", "--no-plots", script="compute_agent_metrics.py", cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    out = agent_dir.parent / "metric_reports" / agent_dir.name  # beside the scored directory, not in the cwd
    assert (out / "report.html").is_file() and f"wrote {out}/ (tables.md, *.csv, report.html)" in scored.stdout
    assert _tree(run_dir) == before  # not a byte nor an mtime changed inside the run
    scored = run_cli(str(tmp_path / "results"), "--no-embeddings", "--no-plots", "--no-html",
                     script="compute_agent_metrics.py", cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr  # the report dir inside results/ is not taken for a run
    out = tmp_path / "metric_reports" / "results"
    assert f"wrote {out}/ (tables.md, *.csv)\n" in scored.stdout + "\n"  # nothing it did not write
    assert len((out / "runs.csv").read_text().splitlines()) == 2
    # a finished run whose export is gone gets it back from `resume` (re-running the same command)
    shutil.rmtree(run_dir / "best_solution")
    (run_dir / "report.html").unlink()
    again, said = run_inprocess(*args)
    assert again["run_dir"] == str(run_dir) and "nothing to do" in said
    assert (run_dir / "best_solution").is_dir() and (run_dir / "report.html").is_file()


def test_best_solution_readme_keeps_hostile_agent_text_inside_its_fences(tmp_path: Path) -> None:
    steps = golden_steps()
    steps[3].plan = "fixed it\n````\n# Fake heading\x1b[31m outside the fence?"
    steps[3].files = {"model.py": "a = 4  # ```` \x1b]0;title\x07\n"}
    run_dir = write_run(tmp_path / "results", "aide", "toy", 0, steps, baseline_test=12.0, best_test=5.0)
    best, _ = export_run(run_dir)
    readme = (best / "README.md").read_text()
    assert "\x1b" not in readme and "\x07" not in readme
    assert "`````diff\n" in readme  # fences longer than the agent's own run of backticks
    plan_block = readme.split("## What the agent said it did")[1].split("`````")[1]
    assert "\n````\n# Fake heading" in plan_block  # inside the fence, not a heading of the README
    assert "| this solution | 4 | 5 |" in readme and "| baseline | 10 | 12 |" in readme


def test_the_run_pages_chart_is_matplotlibs_with_axes_and_the_profile_skips_missing_tasks(tmp_path: Path) -> None:
    """Issue 26 (new user 6): a run page's best-so-far chart is matplotlib's SVG with both axes, ticks and the
    reference lines, text drawn as paths (no agent or manifest text as markup); the performance profile
    leaves a task an agent never ran out of its fraction instead of counting it as a failure."""
    pytest.importorskip("matplotlib")
    import numpy as np

    from researchbench.benchmark.scoring.plots import profile_fractions

    for agent, task, test in (("aide", "toy", 5.0), ("aide", "toy2", 5.0), ("greedy", "toy", 5.0)):
        write_run(tmp_path / "results", agent, task, 0, golden_steps(), baseline_test=12.0, best_test=test)
    options = Options(results=tmp_path / "results", out=tmp_path / "out", embeddings=False)
    results = score(options, lambda line: None)
    page = (tmp_path / "out" / "runs" / "0000.html").read_text()
    chart = page[page.index("Best validation score so far"):page.index("Search tree")]
    assert chart.count("<svg") == 1 and 'id="matplotlib.axis_1"' in chart and 'id="matplotlib.axis_2"' in chart
    assert chart.count('id="xtick_') >= 2 and chart.count('id="ytick_') >= 2 and "<text" not in chart
    assert "<?xml" not in chart and "<script" not in chart
    score(Options(results=tmp_path / "results", out=tmp_path / "again", embeddings=False, plots=False), lambda line: None)
    assert (tmp_path / "again" / "runs" / "0000.html").read_text() == page  # the same bytes for the same run
    df = results["runs"]
    fractions = profile_fractions(df, np.array([0.0]))
    assert set(df["task_id"]) == {"toy", "toy2"}
    greedy = next(v for v in fractions if v.startswith("greedy"))
    assert fractions[greedy] == ([1.0], 1, 2)  # its one task reaches tau=0: 1 of 1, not 1 of 2


def test_tables_md_splits_the_wide_groups_table_and_groups_csv_keeps_it_whole(tmp_path: Path) -> None:
    """Issue 26 (new user 6): the ~70-column groups table is split in tables.md into parts of at most
    9 value columns, each repeating the group keys, the headline's part first; groups.csv has every column."""
    import pandas as pd

    from researchbench.benchmark.scoring.keys import GROUP_KEYS
    from researchbench.benchmark.scoring.tables import GROUP_PART_VALUES

    for seed in (0, 1):
        write_run(tmp_path / "results", "aide", "toy", seed, golden_steps(), baseline_test=12.0, best_test=5.0)
    score(Options(results=tmp_path / "results", out=tmp_path / "out", embeddings=False, plots=False, html=False),
          lambda line: None)
    whole = pd.read_csv(tmp_path / "out" / "groups.csv")
    assert len(whole.columns) > 50
    md = (tmp_path / "out" / "tables.md").read_text()
    section = md[md.index("## Groups over seeds"):]
    section = section[:section.index("\n## ", 1)]
    lines = section.splitlines()
    heads = [lines[i + 2] for i, line in enumerate(lines) if line.startswith("### Groups, part")]  # header rows
    assert len(heads) >= 5 and "### Groups, part 1 of" in section and "groups.csv" in section
    keys = [k for k in (*GROUP_KEYS, "n", "seeds") if k in whole.columns]
    shown: list[str] = []
    for head in heads:
        columns = [c.strip() for c in head.strip("|").split("|")]
        assert columns[:len(keys)] == keys and len(columns) - len(keys) <= GROUP_PART_VALUES
        shown += columns[len(keys):]
    assert heads[0].split("|")[len(keys) + 1].strip() == "achievement"
    assert sorted(shown) == sorted(c for c in whole.columns if c not in keys)  # nothing lost, nothing twice
