"""Code embeddings for the exploration metrics: GraphCodeBERT through transformers, cached by content.

Each snapshot is tokenized whole, cut into 510-token chunks, each wrapped as <s> chunk </s>; the
model's first-token (CLS) vector of each chunk is kept, and a snapshot's record is the SUM of its
chunk vectors and the chunk count. From that both poolings follow: FML-bench's sum (whose norm grows
with code length, so reach and spread track file size) and our mean over chunks. Chunks of all
snapshots are batched (sorted by length, padded, with an attention mask), on the GPU when there is
one. A snapshot is embedded once: records live under `<cache>/<model key>/<sha256 of the text>.npy`,
where the model key is the hub id and pinned revision, or a hash of a local model directory's files.
torch and transformers are imported only when something must be embedded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path
from typing import Iterable

import numpy as np

from researchbench.benchmark.common.errors import UserError

GRAPHCODEBERT = "microsoft/graphcodebert-base"
# The hub revision loaded when no local model is given. It could not be checked from this machine (no
# hub access); a local copy given by --embedding-model is pinned by the hash of its files instead.
GRAPHCODEBERT_REVISION = "main"
CHUNK_TOKENS = 510
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "researchbench" / "embeddings"
METRICS_EXTRA = "pip install -c requirements/lock.txt -e '.[metrics]'"  # torch, transformers, matplotlib


class EmbeddingUnavailable(Exception):
    """The model cannot be loaded (offline, missing files); the message is one line naming the fix."""


def how_to_get(model: str) -> str:
    return (f"the embedding model '{model}' is not available offline, so the exploration metrics are left empty; "
            f"download it once with `hf download {GRAPHCODEBERT} --revision {GRAPHCODEBERT_REVISION} "
            f"--local-dir models/graphcodebert-base` and pass --embedding-model models/graphcodebert-base")


def _dir_fingerprint(path: Path) -> str:
    digest = hashlib.sha256()
    for item in sorted(p for p in path.iterdir() if p.is_file()):
        digest.update(item.name.encode() + b"\0")
        with open(item, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


class Embedder:
    """Snapshot text -> (sum of chunk CLS vectors, chunk count), cached by the text's sha256."""

    def __init__(self, model: str = GRAPHCODEBERT, cache_dir: Path = DEFAULT_CACHE, device: str = "auto",
                 batch_size: int = 16, revision: str = GRAPHCODEBERT_REVISION):
        self.model_name, self.revision, self.device_name, self.batch_size = model, revision, device, batch_size
        local = Path(model)
        if local.is_dir():
            self.key = f"local-{_dir_fingerprint(local)}"
        elif local.exists() or model.startswith((".", "/", "~")) or model.count("/") > 1:
            raise EmbeddingUnavailable(f"--embedding-model {model} is not a model directory "
                                       f"(expected config.json, weights and tokenizer files)")
        else:
            self.key = f"{model.replace('/', '--')}@{revision}"
        self.cache = Path(cache_dir) / self.key
        self._model = None
        self._tokenizer = None
        self.computed = 0  # snapshots embedded (cache misses) by this instance
        self.hits = 0

    # ------------------------------------------------------------------------------- cache
    def _path(self, digest: str) -> Path:
        return self.cache / digest[:2] / f"{digest}.npy"

    def _load(self, digest: str) -> np.ndarray | None:
        try:
            return np.load(self._path(digest))
        except (OSError, ValueError):
            return None

    def _store(self, digest: str, record: np.ndarray) -> None:
        path = self._path(digest)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, record)
        os.replace(tmp, path)

    # ------------------------------------------------------------------------------- model
    def _ensure_model(self) -> None:
        if self._model is not None:
            return
        absent = [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]
        if absent:  # a first run's install leaves the metrics extra out: say how to add it, not how to get a model
            raise EmbeddingUnavailable(f"the exploration metrics need {' and '.join(absent)}, so they are left empty; "
                                       f"install the metrics extra: {METRICS_EXTRA}")
        if not Path(self.model_name).is_dir():  # not in the local HF cache: say so before importing torch
            from huggingface_hub import try_to_load_from_cache

            if not isinstance(try_to_load_from_cache(self.model_name, "config.json", revision=self.revision), str):
                raise EmbeddingUnavailable(how_to_get(self.model_name))
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()  # "sequence longer than the model's maximum": we chunk it ourselves
            hf_logging.disable_progress_bar()
            # never an implicit download: a hub model is read from the local HF cache or not at all
            kwargs = {} if Path(self.model_name).is_dir() else {"revision": self.revision, "local_files_only": True}
            self._tokenizer = AutoTokenizer.from_pretrained(self.model_name, **kwargs)
            model = AutoModel.from_pretrained(self.model_name, **kwargs)
        except (OSError, ValueError, ImportError) as exc:
            if Path(self.model_name).is_dir():
                raise EmbeddingUnavailable(f"cannot load the embedding model from {self.model_name}: "
                                           f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
            raise EmbeddingUnavailable(how_to_get(self.model_name)) from None
        device = self.device_name
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        try:
            self._device = torch.device(device)
            self._model = model.to(self._device).eval()
        except (RuntimeError, AssertionError) as exc:  # no such device, or torch built without CUDA
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise UserError(f"--device {device}: {first}; use auto, cpu or an available cuda device") from None
        max_positions = int(getattr(model.config, "max_position_embeddings", 514))
        self.chunk_tokens = max(1, min(CHUNK_TOKENS, max_positions - 4))

    def _compute(self, texts: list[str]) -> list[np.ndarray]:
        """Embed texts (all cache misses): every chunk of every text, batched by length."""
        self._ensure_model()  # first: without torch it says how to install the metrics extra
        import torch

        tok = self._tokenizer
        ids = tok(texts, add_special_tokens=False, verbose=False)["input_ids"]
        cls_id, sep_id = tok.cls_token_id, tok.sep_token_id if tok.sep_token_id is not None else tok.eos_token_id
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
        chunks: list[tuple[int, list[int]]] = []
        for owner, seq in enumerate(ids):
            for start in range(0, max(len(seq), 1), self.chunk_tokens):
                chunks.append((owner, [cls_id, *seq[start:start + self.chunk_tokens], sep_id]))
        order = sorted(range(len(chunks)), key=lambda i: len(chunks[i][1]))
        dim = int(self._model.config.hidden_size)
        sums = np.zeros((len(texts), dim), dtype=np.float64)
        counts = np.zeros(len(texts), dtype=np.int64)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                batch = [chunks[i] for i in order[start:start + self.batch_size]]
                width = max(len(seq) for _, seq in batch)
                input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for row, (_, seq) in enumerate(batch):
                    input_ids[row, :len(seq)] = torch.tensor(seq)
                    mask[row, :len(seq)] = 1
                out = self._model(input_ids=input_ids.to(self._device), attention_mask=mask.to(self._device))
                cls = out.last_hidden_state[:, 0, :].float().cpu().numpy()
                for row, (owner, _) in enumerate(batch):
                    sums[owner] += cls[row]
                    counts[owner] += 1
        return [np.concatenate([sums[i].astype(np.float32), np.array([counts[i]], dtype=np.float32)])
                for i in range(len(texts))]

    # ------------------------------------------------------------------------------- API
    def embed(self, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """sha256(text) -> record [sum of chunk vectors..., chunk count], from the cache where possible."""
        wanted = {hashlib.sha256(t.encode()).hexdigest(): t for t in texts}
        out: dict[str, np.ndarray] = {}
        missing: dict[str, str] = {}
        for digest, text in wanted.items():
            record = self._load(digest)
            if record is None:
                missing[digest] = text
            else:
                out[digest] = record
        self.hits += len(out)
        if missing:
            digests = list(missing)
            for digest, record in zip(digests, self._compute([missing[d] for d in digests])):
                self._store(digest, record)
                out[digest] = record
            self.computed += len(missing)
        return out


def pooled(record: np.ndarray, pooling: str) -> np.ndarray:
    """A snapshot vector from its record: 'fml' = sum over chunks (FML-bench), 'mean' = mean over chunks."""
    total, count = record[:-1].astype(np.float64), float(record[-1])
    return total if pooling == "fml" else total / max(count, 1.0)


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def embed_runs(runs: list, embedder: Embedder) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray | None]]]:
    """For each run (by run dir): per pooling, the step embeddings [N, d] and the baseline's embedding.

    The baseline is the run's own stored baseline node (its files in the run's blob store), never the
    live workspace. All runs' snapshots are embedded in one batched pass; repeats are embedded once.
    A snapshot of blank code is the zero vector under both poolings, as FML-bench embeds it (rather
    than the encoding of an empty `<s></s>` chunk).
    """
    from researchbench.benchmark.scoring.process import snapshot_text, step_nodes

    texts: dict[str, tuple[list[str], str | None]] = {}
    all_texts: dict[str, str] = {}

    def digest_of(run, node) -> str:
        text = snapshot_text(run.files(node))
        digest = text_digest(text)
        all_texts[digest] = text
        return digest

    for run in runs:
        base = run.baseline
        texts[str(run.run_dir)] = ([digest_of(run, n) for n in step_nodes(run)],
                                   digest_of(run, base) if base is not None else None)
    records = embedder.embed(t for t in all_texts.values() if t.strip())
    dim = next((len(r) - 1 for r in records.values()), 1)
    blank = np.zeros(dim + 1, dtype=np.float32)  # FML-bench embeds blank code as the zero vector
    def vector(digest: str, pooling: str) -> np.ndarray:
        return pooled(records.get(digest, blank), pooling)
    out = {}
    for key, (steps, base) in texts.items():
        out[key] = {}
        for pooling in ("fml", "mean"):
            matrix = np.array([vector(d, pooling) for d in steps]) if steps else np.zeros((0, 1))
            out[key][pooling] = (matrix, vector(base, pooling) if base else None)
    return out
