"""Edit formats: SEARCH/REPLACE and whole-file replies applied to a small codebase, all or nothing."""

from __future__ import annotations

import fnmatch

import pytest

from researchbench.benchmark.edits import apply_edits, format_instructions, normalize_path, unified_diff

TRAIN = """\
import numpy as np


def load(path):
    return np.load(path)


def train(x, y, lr=0.1):
    w = np.zeros(x.shape[1])
    for _ in range(100):
        grad = x.T @ (x @ w - y) / len(y)
        w -= lr * grad
    return w


def main():
    x, y = load("data.npy")
    w = train(x, y)
    print(w)
"""
CONFIG = '{\n  "lr": 0.1,\n  "epochs": 100\n}\n'
CURRENT = {"train.py": TRAIN, "config.json": CONFIG, "prepare.py": "print('data')\n"}
EDITABLE = ["train.py", "config.json", "models/*.py"]


def editable(path: str) -> bool:
    return any(fnmatch.fnmatch(path, pattern) for pattern in EDITABLE)


def sr(path: str, search: str, replace: str) -> str:
    return f"{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def test_many_blocks_in_one_file() -> None:
    reply = (
        "I will tune the learning rate and the loop.\n\n```python\n"
        + sr("train.py", "def train(x, y, lr=0.1):\n", "def train(x, y, lr=0.05):\n")
        + "```\n\nAnd more iterations:\n\n```python\n"
        + sr("train.py", "    for _ in range(100):\n", "    for _ in range(500):\n")
        + "```\n"
    )
    result = apply_edits(reply, CURRENT, editable)
    assert result.ok and result.changed, result.feedback
    assert set(result.files) == {"train.py"}
    new = result.files["train.py"]
    assert "lr=0.05" in new and "range(500)" in new and "range(100)" not in new
    assert result.feedback == "" and result.errors == []


def test_blocks_across_two_files_and_path_reuse() -> None:
    reply = (
        sr("`config.json`", '  "lr": 0.1,\n', '  "lr": 0.01,\n')
        + "\n**train.py**\n<<<<<<< SEARCH\n    print(w)\n=======\n    print(w.round(3))\n>>>>>>> REPLACE\n"
        + "Then also:\n<<<<<<< SEARCH\nimport numpy as np\n=======\nimport numpy as np\nimport json\n>>>>>>> REPLACE\n"
    )
    result = apply_edits(reply, CURRENT, editable, fmt="search_replace")
    assert result.ok, result.feedback
    assert result.files["config.json"] == CONFIG.replace("0.1", "0.01")
    assert "print(w.round(3))" in result.files["train.py"]
    assert result.files["train.py"].startswith("import numpy as np\nimport json\n")


def test_non_matching_block_reports_closest_lines() -> None:
    reply = sr("train.py", "    for step in range(100):\n        grad = x.T @ (x @ w - y)\n", "    pass\n")
    result = apply_edits(reply, CURRENT, editable)
    assert not result.ok and not result.changed and result.files == {}
    assert "block 1 (train.py)" in result.feedback
    assert "does not match" in result.feedback
    assert "    for _ in range(100):\n        grad = x.T @ (x @ w - y) / len(y)" in result.feedback
    assert "lines 10-11" in result.feedback


def test_one_bad_block_applies_nothing() -> None:
    reply = sr("train.py", "def main():\n", "def main(argv=None):\n") + sr("train.py", "nope\n", "x\n")
    result = apply_edits(reply, CURRENT, editable)
    assert not result.ok and result.files == {}
    assert len(result.errors) == 1 and "block 2" in result.errors[0]


def test_whitespace_tolerant_match_keeps_file_indentation() -> None:
    # The LLM dropped the function-body indentation and left trailing spaces.
    reply = sr("train.py", "w -= lr * grad   \n", "w -= lr * grad\nlr *= 0.99\n")
    result = apply_edits(reply, CURRENT, editable)
    assert result.ok, result.feedback
    assert "        w -= lr * grad\n        lr *= 0.99\n" in result.files["train.py"]


def test_crlf_file_and_reply() -> None:
    current = {"train.py": TRAIN.replace("\n", "\r\n")}
    reply = sr("train.py", "def main():\n", "def main(seed=0):\n").replace("\n", "\r\n")
    result = apply_edits(reply, current, editable)
    assert result.ok, result.feedback
    assert result.files["train.py"] == TRAIN.replace("def main():", "def main(seed=0):").replace("\n", "\r\n")


def test_ambiguous_match_is_an_error() -> None:
    current = {"train.py": "x = 1\nprint(x)\nx = 1\n"}
    result = apply_edits(sr("train.py", "x = 1\n", "x = 2\n"), current, editable)
    assert not result.ok
    assert "matches 2 places" in result.feedback and "lines 1, 3" in result.feedback


def test_non_editable_file_rejected_with_editable_list() -> None:
    result = apply_edits(sr("prepare.py", "print('data')\n", "print('labels')\n"), CURRENT, editable)
    assert not result.ok
    assert "prepare.py: not an editable file" in result.feedback
    assert "config.json, train.py" in result.feedback


@pytest.mark.parametrize("path", ["../train.py", "models/../../evil.py", "/etc/passwd", "C:\\x\\train.py"])
def test_escaping_paths_rejected(path: str) -> None:
    result = apply_edits(sr(path, "", "x = 1\n"), CURRENT, lambda p: True)
    assert not result.ok and result.files == {}
    assert normalize_path(path)[0] is None


def test_whole_file_with_inner_fences_preserved() -> None:
    new_train = (
        'FENCE = "```"\n'
        "def doc():\n"
        '    """Example:\n'
        "\n"
        "    ```python\n"
        "    doc()\n"
        "    ```\n"
        '    """\n'
        "    return FENCE\n"
    )
    reply = f"Here is the new file.\n\n### FILE: train.py\n```python\n{new_train}```\n\nThat's all.\n"
    result = apply_edits(reply, CURRENT, editable)
    assert result.ok, result.feedback
    assert result.files == {"train.py": new_train}


def test_whole_file_longer_fence_and_json() -> None:
    readme_like = "x = 1\n```\ny = 2\n"  # a bare ``` inside: the reply opens with four backticks
    reply = (
        "### FILE: models/net.py\n````py\n" + 's = """\n' + readme_like + '"""\n' + "````\n\n"
        "### FILE: config.json\n```json\n" + CONFIG.replace("100", "300") + "```\n"
    )
    result = apply_edits(reply, CURRENT, editable, fmt="whole_file")
    assert result.ok, result.feedback
    assert result.files["models/net.py"] == 's = """\n' + readme_like + '"""\n'
    assert result.files["config.json"] == CONFIG.replace("100", "300")


def test_non_python_files_are_not_compiled() -> None:
    reply = "### FILE: config.json\n```yaml\nlr: [unbalanced\n```\n"
    result = apply_edits(reply, CURRENT, editable)
    assert result.ok and result.files["config.json"] == "lr: [unbalanced\n"


def test_syntax_error_rejected_with_line() -> None:
    result = apply_edits(sr("train.py", "def main():\n", "def main(:\n"), CURRENT, editable)
    assert not result.ok and result.files == {}
    assert "train.py:16: SyntaxError" in result.feedback
    assert "def main(:" in result.feedback


def test_noop_reply_and_identical_edit() -> None:
    nothing = apply_edits("I think the baseline is already optimal.", CURRENT, editable)
    assert nothing.ok and not nothing.changed and "no edits" in nothing.feedback
    same = apply_edits(sr("train.py", "def main():\n", "def main():\n"), CURRENT, editable)
    assert same.ok and not same.changed and same.files == {}
    assert "nothing changed" in same.feedback
    whole_same = apply_edits(f"### FILE: config.json\n```json\n{CONFIG}```\n", CURRENT, editable)
    assert whole_same.ok and not whole_same.changed


def test_new_file_via_empty_search() -> None:
    reply = "models/mlp.py\n```python\n<<<<<<< SEARCH\n=======\ndef mlp():\n    return 1\n>>>>>>> REPLACE\n```\n"
    result = apply_edits(reply, CURRENT, editable)
    assert result.ok and result.changed, result.feedback
    assert result.files == {"models/mlp.py": "def mlp():\n    return 1\n"}


def test_search_on_missing_file_and_truncated_block() -> None:
    missing = apply_edits(sr("models/x.py", "a = 1\n", "a = 2\n"), CURRENT, editable)
    assert not missing.ok and "does not exist" in missing.feedback
    cut = apply_edits("train.py\n<<<<<<< SEARCH\ndef main():\n=======\ndef main(a):\n", CURRENT, editable)
    assert not cut.ok and "REPLACE" in cut.feedback


def test_unified_diff_and_instructions() -> None:
    result = apply_edits(sr("train.py", "    print(w)\n", "    print(w.sum())\n"), CURRENT, editable)
    diff = unified_diff(CURRENT, {**CURRENT, **result.files, "new.txt": "hi"})
    assert "--- a/train.py\n+++ b/train.py\n" in diff
    assert "-    print(w)\n+    print(w.sum())\n" in diff
    assert "--- /dev/null\n+++ b/new.txt\n" in diff and "\\ No newline at end of file" in diff
    assert unified_diff(CURRENT, CURRENT) == ""
    assert "<<<<<<< SEARCH" in format_instructions("search_replace")
    assert "### FILE:" in format_instructions("whole_file")
    assert "SEARCH" in format_instructions("auto") and "### FILE:" in format_instructions("auto")
    with pytest.raises(ValueError):
        format_instructions("diff")
