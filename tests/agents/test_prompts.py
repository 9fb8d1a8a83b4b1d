"""Prompt pieces: line-bounded tails that keep tracebacks, sentence-bounded summaries, the section
budget, the harness outline, and the cached data preview."""

from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd

from researchbench.agents.kit.text import (Section, assemble, diff_stats, head_and_tail, head_lines, middle,
                                           outline_python, summarize, tail_lines)
from researchbench.benchmark.tasks import data_preview

LIB = '  File "/usr/lib/python3.11/site-packages/numpy/core.py", line {n}, in inner{n}\n    return f(x)\n'
TRACE = ("step 1 done\n" * 50 + "Traceback (most recent call last):\n"
         '  File "/code/driver.py", line 10, in <module>\n    main()\n'
         '  File "/code/model.py", line 42, in estimate_ite\n    return np.clip(x, low=1)\n'
         + "".join(LIB.format(n=n) for n in range(30))
         + "TypeError: positive() got an unexpected keyword argument 'low'\n")


def test_tail_cuts_at_line_boundaries() -> None:
    text = "\n".join(f"line {i:03d} " + "x" * 20 for i in range(200))
    tail = tail_lines(text, 300)
    first, *rest = tail.splitlines()
    assert first.startswith("[... ") and first.endswith("earlier lines cut ...]")
    assert all(line.startswith("line ") and len(line) == 29 for line in rest)
    assert rest[-1].startswith("line 199") and len(tail) <= 300 + len(first) + 1
    assert tail_lines("short", 300) == "short"


def test_traceback_keeps_error_line_agent_frames_and_innermost_frame() -> None:
    tail = tail_lines(TRACE, 700)
    assert tail.rstrip().endswith("TypeError: positive() got an unexpected keyword argument 'low'")
    assert "Traceback (most recent call last):" in tail
    assert 'File "/code/model.py", line 42' in tail and "np.clip(x, low=1)" in tail  # where the fix goes
    assert "in inner29" in tail  # the innermost frame
    assert "frames cut ...]" in tail and "step 1 done" not in tail
    assert len(tail) < 900
    whole = tail_lines(TRACE, 10_000)
    assert whole == TRACE.rstrip("\n")


def test_summary_ends_at_a_sentence_and_head_at_a_line() -> None:
    plan = "Use a T-learner. It fits each arm apart, which suits 448 units. Then tune the depth of the trees a lot."
    assert summarize(plan, 70) == "Use a T-learner. It fits each arm apart, which suits 448 units. [...]"
    assert summarize("one very long sentence without an end " * 5, 40).endswith(" ...")
    assert head_lines("a\nbb\nccc\ndddd", 6) == "a\nbb\n[... 2 more lines cut ...]"


def test_middle_cut_keeps_the_opening_and_the_conclusion() -> None:
    text = "It worked: PEHE fell from 3.6 to 2.2. " + "The arms differ in size. " * 40 + "Next: try an X-learner."
    cut = middle(text, 160)
    assert len(cut) <= 160 and cut.startswith("It worked: PEHE fell") and cut.endswith("Next: try an X-learner.")
    assert "[...]" in cut and middle("short enough", 160) == "short enough"


def test_head_and_tail_keeps_both_ends_and_counts_what_it_cut() -> None:
    text = "\n".join(f"line {i:03d}" for i in range(300))
    cut = head_and_tail(text, 400)
    lines = cut.splitlines()
    assert lines[0] == "line 000" and lines[-1] == "line 299" and len(cut) < 500
    [marker] = [line for line in lines if "cut" in line]
    kept = len(lines) - 1
    assert marker == f"[... {300 - kept} lines cut from the middle ...]"
    with_trace = head_and_tail("config: lr=0.1\n" + TRACE, 900)
    assert with_trace.startswith("config: lr=0.1") and "unexpected keyword argument 'low'" in with_trace
    assert head_and_tail("a\nb", 400) == "a\nb"


def test_assemble_shrinks_least_important_sections_first() -> None:
    sections = [Section("Task", ["T" * 100], 100), Section("Data", ["D" * 500, ""], 40),
                Section("Attempts", ["A" * 400, "A" * 100], 70), Section("Job", ["J" * 50], 100)]
    text = assemble(sections, 700)
    assert "# Data" not in text and "A" * 400 in text  # data dropped first; that was enough
    text = assemble([Section(s.title, s.variants, s.priority) for s in sections], 300)
    assert "# Data" not in text and "A" * 101 not in text and "A" * 100 in text and "T" * 100 in text
    text = assemble([Section("Task", ["T" * 1000], 100)], 10)
    assert "T" * 1000 in text  # never cut below the last variant


def test_outline_keeps_the_contract_of_a_harness_file() -> None:
    source = '"""Runs model.py per replication."""\nimport x\n\ndef run(phase: str) -> int:\n' \
             '    """Run one phase."""\n    return 0\n\nclass DriverError(Exception):\n    pass\n'
    outline = outline_python(source)
    assert '"""Runs model.py per replication."""' in outline
    assert "def run(phase: str) -> int:  # Run one phase." in outline and "class DriverError(Exception):" in outline
    assert "return 0" not in outline


def test_diff_stats_counts_lines_and_files() -> None:
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1 +1,2 @@\n-a\n+b\n+c\n"
    assert diff_stats(diff) == "+2 -1 lines in m.py" and diff_stats("") == "no change"


def test_data_preview_describes_tables_arrays_and_json_and_is_cached(tmp_path) -> None:
    pd.DataFrame({"x": [1.5, 2.5, None], "label": ["a", "b", "a"]}).to_csv(tmp_path / "train.csv", index=False)
    np.save(tmp_path / "emb.npy", np.zeros((4, 3), dtype=np.float32))
    (tmp_path / "meta.json").write_text('{"classes": ["a", "b"], "version": 2}')
    text = data_preview.preview(tmp_path)
    assert "train.csv" in text and "3 rows x 2 columns" in text and "x (float64, 1.5..2.5, 1 missing)" in text
    assert "label (" in text and ", 2 distinct)" in text
    assert "emb.npy" in text and "shape (4, 3), dtype float32" in text
    assert "classes: list[2] of str" in text
    assert data_preview.preview(tmp_path) is text  # cached: same fingerprint, same object
    time.sleep(0.01)
    pd.DataFrame({"x": [1.0]}).to_csv(tmp_path / "train.csv", index=False)
    os.utime(tmp_path / "train.csv")
    assert "1 rows x 1 columns" in data_preview.preview(tmp_path)  # a changed file rebuilds it
    assert data_preview.preview(None) == "" and data_preview.preview(tmp_path / "missing") == ""


def test_data_preview_shows_numbered_pixel_columns_as_one_image(tmp_path) -> None:
    """64 columns p0..p63 are one entry and the first row is drawn as its 8x8 grid, not one long row."""
    pixels = np.arange(2 * 64, dtype=float).reshape(2, 64)
    frame = pd.DataFrame(pixels, columns=[f"p{i}" for i in range(64)])
    frame.insert(0, "id", [7, 9])
    frame["label"] = [3, 4]
    frame.to_csv(tmp_path / "train.csv", index=False)
    text = data_preview.preview(tmp_path)
    assert "p0..p63 (64 columns, a 8x8 image, row by row; float64, 0..127)" in text
    assert "id (int64, 7..9)" in text and "label (int64, 3..4)" in text
    grid = text.split("as the 8x8 image:\n", 1)[1].splitlines()[:8]
    assert [float(v) for v in grid[1].split()] == list(range(8, 16))  # the first row's second image row
    assert "p5 " not in text  # no column of the group listed one by one
