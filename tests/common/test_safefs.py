"""What the harness does with trees hostile code wrote: read declared outputs safely, measure, delete."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from researchbench.benchmark.common.safefs import UnsafeOutput, discard_tree, read_regular_file, remove_tree, tree_usage
from researchbench.benchmark.executors.output import CappedWriter

CAP = 1024


@pytest.fixture()
def out(tmp_path: Path) -> Path:
    d = tmp_path / "output"
    d.mkdir()
    (tmp_path / "secret.csv").write_text("the hidden labels")
    return d


def _reason(out: Path, rel: str = "predictions.csv", cap: int = CAP) -> str:
    with pytest.raises(UnsafeOutput) as err:
        read_regular_file(out, rel, cap)
    message = str(err.value)
    assert "secret" not in message and str(out.parent) not in message, "never describe a link's target"
    return message


def test_regular_file_is_read(out: Path) -> None:
    (out / "predictions.csv").write_text("rep,unit,ite\n1,2,3\n")
    (out / "sub").mkdir()
    (out / "sub" / "p.csv").write_text("x")
    assert read_regular_file(out, "predictions.csv", CAP) == b"rep,unit,ite\n1,2,3\n"
    assert read_regular_file(out, "sub/p.csv", CAP) == b"x"


def test_symlink_to_hidden_file_is_refused(out: Path) -> None:
    (out / "predictions.csv").symlink_to(out.parent / "secret.csv")
    assert "symbolic link" in _reason(out)


def test_symlink_in_a_parent_component_is_refused(out: Path) -> None:
    (out.parent / "elsewhere").mkdir()
    (out.parent / "elsewhere" / "p.csv").write_text("labels")
    (out / "sub").symlink_to(out.parent / "elsewhere")
    assert "symbolic link" in _reason(out, "sub/p.csv")


def test_hard_link_is_refused(out: Path) -> None:
    (out / "a.csv").write_text("x")
    os.link(out / "a.csv", out / "predictions.csv")
    assert "hard link" in _reason(out)


def test_fifo_is_refused_without_blocking(out: Path) -> None:
    os.mkfifo(out / "predictions.csv")
    done = threading.Event()

    def read() -> None:
        try:
            read_regular_file(out, "predictions.csv", CAP)
        except UnsafeOutput:
            done.set()

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(timeout=5)
    assert done.is_set(), "a FIFO must be refused at once, not opened and read"
    assert "FIFO" in _reason(out)


def test_device_link_and_directory_are_refused(out: Path) -> None:
    (out / "predictions.csv").symlink_to("/dev/zero")
    assert "symbolic link" in _reason(out)
    (out / "predictions.csv").unlink()
    (out / "predictions.csv").mkdir()
    assert "directory" in _reason(out)


def test_sparse_huge_file_counts_by_apparent_size(out: Path) -> None:
    with open(out / "predictions.csv", "wb") as f:
        f.truncate(4 * 1024**3)  # 4 GB that occupy no disk
    assert "over the" in _reason(out)


def test_file_just_over_the_cap_is_refused(out: Path) -> None:
    (out / "predictions.csv").write_bytes(b"x" * (CAP + 1))
    assert "over the" in _reason(out)
    (out / "predictions.csv").write_bytes(b"x" * CAP)
    assert len(read_regular_file(out, "predictions.csv", CAP)) == CAP


def test_missing_and_traversal(out: Path) -> None:
    assert "was not written" in _reason(out)
    assert "plain relative path" in _reason(out, "../other.csv")


def _deep(root: Path, depth: int) -> None:
    """A chain `depth` dirs deep (paths far beyond PATH_MAX), made with relative mkdirs."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d" * 200, dir_fd=fd)
            child = os.open("d" * 200, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            with open(os.open("f", os.O_WRONLY | os.O_CREAT, dir_fd=child), "w") as f:
                f.write("x")
            os.close(fd)
            fd = child
    finally:
        os.close(fd)


def test_remove_tree_handles_deep_unreadable_and_linked_trees(tmp_path: Path) -> None:
    root = tmp_path / "job"
    root.mkdir()
    _deep(root, 5000)
    locked = root / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "f").write_text("x")
    keep = tmp_path / "keep.txt"
    keep.write_text("must survive")
    (root / "link").symlink_to(keep)
    (root / "dirlink").symlink_to(tmp_path)
    os.mkfifo(root / "fifo")
    os.chmod(locked / "inner", 0)
    os.chmod(locked, 0)
    assert remove_tree(root) is True
    assert not root.exists() and keep.read_text() == "must survive"


def test_discard_tree_always_frees_the_name(tmp_path: Path) -> None:
    root = tmp_path / "scratch"
    root.mkdir()
    _deep(root, 1200)
    assert discard_tree(root) is True
    assert not root.exists() and not list(tmp_path.glob(".trash-*"))
    root.mkdir()  # the name is free for a fresh run


def test_tree_usage_counts_blocks_and_flags_depth(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    (root / "big").write_bytes(os.urandom(1 << 20))
    with open(root / "sparse", "wb") as f:
        f.truncate(1 << 30)
    usage = tree_usage(root)
    assert (1 << 20) <= usage.bytes < (1 << 20) + (1 << 18) and not usage.too_deep
    _deep(root, 200)
    assert tree_usage(root, max_depth=128).too_deep


def test_capped_writer_survives_a_full_disk(tmp_path: Path) -> None:
    writer = CappedWriter(Path("/dev/full"), cap=1000)
    writer.write(b"x" * 5000)
    assert writer.close() is True and writer.lost > 0
