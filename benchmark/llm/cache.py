"""The record/replay cache of LLM replies, keyed by everything that decides a reply."""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Optional

from researchbench.benchmark.llm.config import LLMConfig

_log = logging.getLogger(__name__)


def cache_key(cfg: LLMConfig, messages: list[dict]) -> str:
    """sha256 of everything that decides the reply; canonical JSON so dict order cannot matter."""
    material = {
        "model": cfg.model,
        "api_base": cfg.api_base,
        "messages": messages,
        "temperature": cfg.temperature,
        "max_tokens": cfg.max_tokens,
        "extra": cfg.extra,
    }
    canonical = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


class ResponseCache:
    """One JSON file per request key; written atomically so a killed run never leaves half a file.
    An entry may also be stored gzipped (`<key>.json.gz`): recordings kept in a repository are, and read the same.

    Each entry also names the operator and its position among that operator's calls in the recorded
    run, so a replay can fall back to "the same reply at the same point" when a prompt differs only
    in what is not reproducible (the measured run times the prompts show).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._positions: Optional[dict[tuple[str, int], list[dict[str, Any]]]] = None

    def path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def get(self, key: str) -> Optional[dict[str, Any]]:
        path = self.path(key)
        try:
            try:
                raw = path.read_bytes()
            except FileNotFoundError:
                path = path.with_name(path.name + ".gz")
                raw = gzip.decompress(path.read_bytes())
            entry = json.loads(raw.decode("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, EOFError) as exc:  # gzip.BadGzipFile is an OSError
            _log.warning("ignoring unreadable LLM cache entry %s: %s", path, exc)
            return None
        return entry if isinstance(entry, dict) and isinstance(entry.get("response"), str) else None

    def at_position(self, operator: str, position: int) -> Optional[dict[str, Any]]:
        """The one recorded entry for ``operator``'s call number ``position``; None when there is none
        or several (a folder that recorded several different runs cannot say which one to follow)."""
        if self._positions is None:
            self._positions = {}
            keys = {path.name.split(".", 1)[0] for pattern in ("*.json", "*.json.gz") for path in self.root.glob(pattern)}
            for key in sorted(keys):
                entry = self.get(key)
                if entry is not None and isinstance(entry.get("position"), int):
                    self._positions.setdefault((str(entry.get("operator", "")), entry["position"]), []).append(entry)
        found = self._positions.get((operator, position), [])
        return found[0] if len(found) == 1 else None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=self.root)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(entry, fh, ensure_ascii=True, sort_keys=True, indent=1)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path(key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
