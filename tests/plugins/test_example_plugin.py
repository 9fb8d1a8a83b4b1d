"""The example agent package in examples/ installs like a user's plugin and runs offline on a script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES, REPO, journal_records, run_cli


def test_example_beam_plugin_installs_and_runs_with_scripted_replies(toy, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(site), str(REPO / "examples" / "researchbench-beam")], check=True)
    proc = run_cli("agent=beam", "task=toy", "budget.steps=3", "agent.width=2", "llm=scripted",
                   f"llm.script={FIXTURES / 'scripts' / 'toy'}", f"results_dir={tmp_path / 'results'}",
                   env={"PYTHONPATH": f"{site}:{REPO}"})
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "results" / "beam" / "toy").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["agent"] == "beam" and summary["steps"]["experiments"] == 3
    records = [r for r in journal_records(run_dir) if r["kind"] == "finished"]
    nodes = [r["node"] for r in records]
    # the beam rotates: improve the baseline (slope 2.8), then the beam's second, the baseline again (2.9,
    # now the best), then the beam's first, node 0002 (slope 3.0, the true slope)
    assert [(n["operator"], n["parents"]) for n in nodes[1:]] == [
        ("improve", ["0000"]), ("improve", ["0000"]), ("improve", ["0002"])]
    assert summary["best"]["val"] == 0.0 and records[-1]["checkpoint"]["policy"] == {"turn": 3}
