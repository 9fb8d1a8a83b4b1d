"""One headline, printed the same way everywhere a run's result is shown: the run's summary lines on the
console, the sweep table and the scorer (compute_agent_metrics.py). It is the clipped achievement
clip((s - floor) / (target - floor), 0, 1) (benchmark/scoring/normalize.py); the unclipped score only
ever follows it, labelled, so a run far below the floor reads "achievement 0.0000", never "-296"."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import compose, run_inprocess

# val inputs are 0.5 and 1.5, test inputs 1.0 and 3.0 (y = 3x): exact on val, far off on the test's 3.0
OVERFIT = """Plan: fit the validation points exactly.

### FILE: model.py
```python
def predict(x, params):
    return 3.0 * x if x < 2 else -100.0
```
"""


def test_the_console_the_sweep_table_and_the_scorer_print_the_same_headline(toy, tmp_path: Path, capsys) -> None:
    from omegaconf import OmegaConf

    import compute_agent_metrics
    from researchbench.benchmark.launch.sweep_table import COLUMNS, sweep_rows
    from researchbench.benchmark.scoring.normalize import achievement, headline_text, unclipped
    from researchbench.benchmark.scoring.runs import load_run

    overrides = ("agent=greedy", "task=toy", "budget.steps=1", "llm=mock", f"results_dir={tmp_path / 'results'}")
    summary, console = run_inprocess(*overrides, llm__mock_responses=[OVERFIT])
    run = load_run(Path(summary["run_dir"]))
    test = summary["best"]["test"]
    assert summary["best"]["node"] == "0001" and test > summary["metric"]["floor"]  # best on val, worse than the floor
    assert achievement(run.metric, test) == 0.0 and unclipped(run.metric, test) < -100
    assert summary["best"]["achievement_test"] == 0.0
    headline = headline_text(run.metric, test)
    assert headline == "0.0000"

    (best_line,) = [line for line in console.splitlines() if line.lstrip().startswith("best (node")]
    shown = re.search(r"achievement (\S+) \(unclipped (-\d+\.\d+)\)", best_line)
    assert shown and shown[1] == headline, best_line
    assert best_line.index("achievement") < best_line.index("unclipped")

    cfg = compose(*overrides)  # the sweep's own config of this job: the same run id, so the same run directory
    OmegaConf.update(cfg, "llm.mock_responses", [OVERFIT], merge=False)
    rows, statuses = sweep_rows([cfg])
    assert statuses == ["finished"]
    assert dict(zip(COLUMNS, rows[0]))["achievement"] == headline and "normalized" not in COLUMNS

    capsys.readouterr()
    assert compute_agent_metrics.main([str(tmp_path / "results"), "--out", str(tmp_path / "scores"),
                                       "--no-embeddings", "--no-plots", "--no-html"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Headline: clipped achievement per task"), out[:200]
    headline_table = out.split("\n\n", 1)[0].splitlines()
    (row,) = [line for line in headline_table if line.startswith("greedy")]
    assert row.split()[1] == headline, headline_table
