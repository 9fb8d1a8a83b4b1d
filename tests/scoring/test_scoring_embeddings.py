"""Exploration embeddings: a tiny RoBERTa built here (no download), chunking and both poolings, the
content-hash cache, the run's own stored baseline, and the offline path without the model."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from researchbench.benchmark.common.errors import UserError
from researchbench.benchmark.scoring.embeddings import EmbeddingUnavailable, Embedder, embed_runs, pooled
from researchbench.benchmark.scoring.pipeline import Options, score
from researchbench.benchmark.scoring.selection import select_runs
from scoring_runs import build_tiny_roberta, write_run
from test_scoring import golden_steps

CODE = ["def f(x):\n    return x + 1\n", "import numpy as np\nclass Model:\n    def fit(self, X, y):\n        pass\n"]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_roberta(tmp_path_factory.mktemp("tiny") / "tiny-roberta", CODE * 4)


def _unbatched_cls(embedder: Embedder, ids: list[int]) -> np.ndarray:
    """FML-bench's way: one chunk at a time, no padding, no mask."""
    import torch

    with torch.inference_mode():
        return embedder._model(input_ids=torch.tensor([ids])).last_hidden_state[0, 0].numpy()


def test_tiny_roberta_chunks_pools_and_caches(tiny_model: Path, tmp_path: Path) -> None:
    short, long = "def f(x): return x\n", "x = np.zeros(3)\n" * 300  # the long one needs several 510-token chunks
    embedder = Embedder(str(tiny_model), tmp_path / "cache", device="cpu", batch_size=3)
    records = embedder.embed([short, long, short])
    assert embedder.computed == 2 and embedder.hits == 0  # a repeated snapshot is embedded once
    by_text = {t: records[k] for t, k in zip((short, long), records)}
    ids = embedder._tokenizer(long, add_special_tokens=False)["input_ids"]
    chunks = [ids[i:i + 510] for i in range(0, len(ids), 510)]
    assert len(chunks) >= 2 and by_text[long][-1] == len(chunks)
    tok = embedder._tokenizer
    expected = sum(_unbatched_cls(embedder, [tok.cls_token_id, *c, tok.sep_token_id]) for c in chunks)
    np.testing.assert_allclose(pooled(by_text[long], "fml"), expected, rtol=1e-4, atol=1e-5)  # padding is masked
    np.testing.assert_allclose(pooled(by_text[long], "mean"), expected / len(chunks), rtol=1e-4, atol=1e-5)
    assert not np.allclose(pooled(by_text[short], "mean"), pooled(by_text[long], "mean"))

    with pytest.raises(UserError, match="--device nosuch:"):
        Embedder(str(tiny_model), tmp_path / "other-cache", device="nosuch").embed(["y = 2"])
    again = Embedder(str(tiny_model), tmp_path / "cache", device="cpu")
    cached = again.embed([long, short])
    assert again.computed == 0 and again.hits == 2 and again._model is None  # the model is never loaded
    np.testing.assert_array_equal(cached[list(cached)[0]], records[list(cached)[0]])


def test_exploration_uses_the_runs_stored_baseline(tiny_model: Path, tmp_path: Path) -> None:
    run_dir = write_run(tmp_path / "results", "a", "t", 0, golden_steps(), baseline_test=12.0, best_test=5.0)
    (run,) = select_runs(tmp_path / "results", warn=lambda line: None).runs
    embedder = Embedder(str(tiny_model), tmp_path / "cache", device="cpu")
    embedded = embed_runs([run], embedder)[str(run_dir)]
    steps, base = embedded["mean"]
    assert steps.shape[0] == 5  # one per val step, baseline excluded
    direct = embedder.embed(["x = 1\n"])  # the baseline's stored snapshot (write_run's default file)
    np.testing.assert_allclose(base, pooled(next(iter(direct.values())), "mean"))


def test_blank_code_is_the_zero_vector_as_fml_bench_embeds_it(tiny_model: Path, tmp_path: Path) -> None:
    steps = golden_steps()
    steps[1].files = {"model.py": "  \n\t\n"}  # the agent emptied the file
    run_dir = write_run(tmp_path / "results", "a", "t", 0, steps, baseline_test=12.0, best_test=5.0)
    (run,) = select_runs(tmp_path / "results", warn=lambda line: None).runs
    embedder = Embedder(str(tiny_model), tmp_path / "cache", device="cpu")
    embedded = embed_runs([run], embedder)[str(run_dir)]
    for pooling in ("fml", "mean"):
        vectors = embedded[pooling][0]
        assert not vectors[0].any() and all(v.any() for v in vectors[1:])  # zero, not the encoding of <s></s>
    assert embedder.computed == 4  # the blank snapshot was never sent to the model


def test_scoring_with_the_tiny_model_fills_exploration(tiny_model: Path, tmp_path: Path) -> None:
    write_run(tmp_path / "results", "a", "t", 0, golden_steps(), baseline_test=12.0, best_test=5.0)
    said: list[str] = []
    options = Options(results=tmp_path / "results", out=tmp_path / "out", embedding_model=str(tiny_model),
                      embedding_cache=tmp_path / "cache", plots=False, html=False)
    row = score(options, said.append)["runs"].iloc[0]
    for name in ("spread", "uniqueness", "reach", "effective_dim"):
        assert math.isfinite(row[f"{name}_fml"]) and math.isfinite(row[f"{name}_mean"]), name
    assert row["reach_fml"] >= row["reach_mean"]  # the sum over chunks is never shorter than their mean
    assert any("0 snapshots from the cache, 5 computed" in line for line in said)


def test_offline_without_the_model_is_one_line_and_everything_else_scores(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))  # no cached GraphCodeBERT
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    with pytest.raises(EmbeddingUnavailable, match="--embedding-model"):
        Embedder(cache_dir=tmp_path / "cache").embed(["def f(): pass"])
    with pytest.raises(EmbeddingUnavailable, match="not a model directory"):
        Embedder("./no/such/model", cache_dir=tmp_path / "cache")
    write_run(tmp_path / "results", "a", "t", 0, golden_steps(), baseline_test=12.0, best_test=5.0)
    said: list[str] = []
    options = Options(results=tmp_path / "results", out=tmp_path / "out", embedding_cache=tmp_path / "cache",
                      plots=False, html=False)
    row = score(options, said.append)["runs"].iloc[0]
    (note,) = [line for line in said if "embedding model" in line]
    assert note.startswith("note: ") and "hf download microsoft/graphcodebert-base" in note and "\n" not in note
    assert math.isnan(row["spread_mean"]) and row["auc_fml"] == pytest.approx(0.22) and row["achievement"] == 0.75


def test_without_the_metrics_extra_the_note_says_how_to_install_it(tmp_path: Path, monkeypatch) -> None:
    """A first run's install has no torch: the scorer's one note names the extra, not a model download."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    monkeypatch.setitem(sys.modules, "torch", None)  # and importing it fails, as where it is not installed
    with pytest.raises(EmbeddingUnavailable) as exc:
        Embedder(cache_dir=tmp_path / "cache").embed(["def f(): pass"])
    assert str(exc.value) == ("the exploration metrics need torch, so they are left empty; install the metrics "
                              "extra: pip install -c requirements/lock.txt -e '.[metrics]'")
