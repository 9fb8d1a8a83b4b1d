"""The record/replay cache of LLM replies, keyed by everything that decides a reply.

Measured durations are not part of the key: prompts state how long experiments took ("4.1 s CPU",
"3% of the limit", a driver's "done in 6.8 s"), and no two runs measure the same times, so a key with
them would make every prompt after the first experiment a replay miss.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Optional

from benchmark.llm.config import LLMConfig

_log = logging.getLogger(__name__)

# a number in seconds ("4.1 s", "6.8s") or a percentage ("3%"): measured, so it varies between runs
MEASURED = re.compile(r"\d+(?:\.\d+)?(?= ?s\b|%)")


def _stable(messages: list[dict]) -> list[dict]:
    return [{**m, "content": MEASURED.sub("#", m["content"])} if isinstance(m.get("content"), str) else m
            for m in messages]


def cache_key(cfg: LLMConfig, messages: list[dict]) -> str:
    """sha256 of everything that decides the reply; canonical JSON so dict order cannot matter."""
    material = {
        "model": cfg.model,
        "api_base": cfg.api_base,
        "messages": _stable(messages),
        "temperature": cfg.temperature,
        "max_tokens": cfg.max_tokens,
        "extra": cfg.extra,
    }
    canonical = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


class ResponseCache:
    """One JSON file per request key; written atomically so a killed run never leaves half a file."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def get(self, key: str) -> Optional[dict[str, Any]]:
        path = self.path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            _log.warning("ignoring unreadable LLM cache entry %s: %s", path, exc)
            return None
        return entry if isinstance(entry, dict) and isinstance(entry.get("response"), str) else None

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
