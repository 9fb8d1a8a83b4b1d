"""task_runtime's pieces for the digits-based tasks: data preparation (digits, datasets) and the
two-pass per-row prediction check (rowwise)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from researchbench.task_runtime import DriverError
from researchbench.task_runtime.datasets import prepare_main, stratified_split, write_tables
from researchbench.task_runtime.digits import PIXELS, digit_images, digit_pixels, on_canvas, scaled_pixels
from researchbench.task_runtime.rowwise import CHUNK, predict_per_row

IDS = np.arange(100, 200)


def test_digit_loaders_agree_on_images_and_labels() -> None:
    pixels, labels = digit_pixels()
    images, same_labels = digit_images()
    assert pixels.shape == (1797, 64) and pixels.dtype == np.int64 and 0 <= pixels.min() and pixels.max() == 16
    assert images.shape == (1797, 8, 8) and images.dtype == np.float32
    np.testing.assert_array_equal(labels, same_labels)
    np.testing.assert_allclose(images.reshape(len(images), -1), pixels / 16.0, atol=1e-6)
    frame = pd.DataFrame(pixels[:5], columns=PIXELS)
    np.testing.assert_array_equal(scaled_pixels(frame), images[:5].reshape(5, -1))


def test_on_canvas_places_each_digit_whole_somewhere_and_draws_from_the_generator() -> None:
    images, _ = digit_images()
    placed = on_canvas(images[:20], 12, 0.0, np.random.default_rng(0)).reshape(20, 12, 12)
    assert placed.dtype == np.float32
    for image, canvas in zip(images[:20], placed):
        windows = [canvas[dy:dy + 8, dx:dx + 8] for dy in range(5) for dx in range(5)]
        assert any(np.array_equal(w, image) for w in windows)
        assert canvas.sum() == pytest.approx(image.sum(), rel=1e-5)  # nothing else drawn on the canvas
    noisy = on_canvas(images[:20], 12, 0.1, np.random.default_rng(0))
    assert noisy.min() >= 0.0 and noisy.max() <= 1.0 and noisy.shape == (20, 144)
    np.testing.assert_array_equal(noisy, on_canvas(images[:20], 12, 0.1, np.random.default_rng(0)))
    assert not np.array_equal(noisy, on_canvas(images[:20], 12, 0.1, np.random.default_rng(1)))


def test_stratified_split_partitions_every_class_in_the_given_fractions() -> None:
    labels = np.repeat(np.arange(4), [50, 30, 21, 10])
    parts = stratified_split(labels, (0.6, 0.2, 0.2), np.random.default_rng(3))
    assert list(parts) == ["train", "val", "test"]
    joined = np.concatenate(list(parts.values()))
    assert sorted(joined) == list(range(len(labels)))  # disjoint, and nothing left out
    for cls, n in enumerate([50, 30, 21, 10]):
        counts = [int((labels[idx] == cls).sum()) for idx in parts.values()]
        assert counts[0] == round(0.6 * n) and counts[1] == round(0.2 * n) and sum(counts) == n
    again = stratified_split(labels, (0.6, 0.2, 0.2), np.random.default_rng(3))
    assert all(np.array_equal(parts[k], again[k]) for k in parts)


def test_stratified_split_can_keep_classes_grouped_and_pick_classes() -> None:
    labels = np.repeat(np.arange(4), 20)
    parts = stratified_split(labels, (0.5, 0.25, 0.25), np.random.default_rng(0), classes=(2, 0),
                             names=("a", "b", "c"), shuffle=False)
    assert list(parts) == ["a", "b", "c"]
    assert labels[parts["a"]].tolist() == [2] * 10 + [0] * 10  # grouped, in the order of `classes`
    assert set(labels[np.concatenate(list(parts.values()))]) == {0, 2}


def test_write_tables_sorts_by_id_with_one_line_ending(tmp_path) -> None:
    frame = pd.DataFrame({"id": [3, 1, 2], "v": [0.5, 1.0, 2.0]})
    write_tables(tmp_path, {"public/a.csv": frame, "labels/b.csv": frame[["id"]]})
    assert (tmp_path / "public" / "a.csv").read_bytes() == b"id,v\n1,1.0\n2,2.0\n3,0.5\n"
    assert (tmp_path / "labels" / "b.csv").read_bytes() == b"id\n1\n2\n3\n"


def test_prepare_main_makes_the_folder_and_builds_into_it(tmp_path, capsys) -> None:
    built = []
    out = tmp_path / "ws" / "task"
    assert prepare_main(built.append, "Write a task's data.", ["--out", str(out)]) == 0
    assert built == [out] and out.is_dir()
    with pytest.raises(SystemExit) as exc:
        prepare_main(built.append, "Write a task's data.", [])
    assert exc.value.code == 2 and "--out" in capsys.readouterr().err


def test_per_row_predictions_come_back_in_input_order_in_small_chunks() -> None:
    x = np.arange(100, dtype=np.float32)[:, None]
    sizes = []

    def parity(rows: np.ndarray) -> np.ndarray:
        sizes.append(len(rows))
        return rows[:, 0] % 2

    labels = predict_per_row(parity, x, IDS, seed=0, where="predict", n_labels=2)
    assert labels.dtype == np.int64 and labels.tolist() == [i % 2 for i in range(100)]
    assert max(sizes) == CHUNK and sum(sizes) == 200  # every row twice, never more than a chunk at once


def test_per_row_rejects_a_model_that_looks_at_the_batch() -> None:
    x = np.arange(100, dtype=np.float32)[:, None]
    with pytest.raises(DriverError, match=r"predict is not a function of each row alone: row id \d+ got"):
        predict_per_row(lambda rows: (rows[:, 0] > rows[:, 0].mean()).astype(int), x, IDS, 0, "predict", n_labels=2)
    with pytest.raises(DriverError, match="not a function of each image alone"):
        predict_per_row(lambda rows: rows[:, 0] - rows[:, 0].mean(), x, IDS, 0, "score", unit="image")


def test_per_row_scores_may_differ_by_rounding_within_the_tolerance() -> None:
    x = np.arange(100, dtype=np.float64)[:, None]
    calls = []

    def jittery(rows: np.ndarray) -> np.ndarray:
        calls.append(1)
        return rows[:, 0] * (1 + 1e-7 * len(calls))  # the second pass rounds a little differently

    scores = predict_per_row(jittery, x, IDS, 0, "score", rtol=1e-4, atol=1e-5)
    assert scores.dtype == np.float64 and scores == pytest.approx(np.arange(100), rel=1e-5)
    calls.clear()
    with pytest.raises(DriverError, match="not a function"):
        predict_per_row(jittery, x, IDS, 0, "score")  # exact agreement by default


@pytest.mark.parametrize("returned, reason", [
    (lambda rows: np.zeros(len(rows) + 1), r"expected \(32,\)"),
    (lambda rows: np.full(len(rows), 2), "must return labels 0..1"),
    (lambda rows: {"a": 1}, "must return numbers"),
], ids=["shape", "range", "dict"])
def test_per_row_labels_are_checked_chunk_by_chunk(returned, reason: str) -> None:
    with pytest.raises(DriverError, match=reason):
        predict_per_row(returned, np.zeros((40, 3)), IDS[:40], 0, "predict", n_labels=2)


def test_per_row_scores_must_be_finite() -> None:
    with pytest.raises(DriverError, match="1 non-finite values"):
        predict_per_row(lambda rows: np.where(rows[:, 0] == 7, np.nan, 0.0), np.arange(40.0)[:, None], IDS[:40], 0,
                        "score")
