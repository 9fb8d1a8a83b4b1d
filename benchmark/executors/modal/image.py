"""What a Modal sandbox is built from: the image spec, the GPU string, and the credentials check.

The image is `debian_slim` with the harness's Python (major.minor) plus the task's requirements, each
pinned to the version installed on the harness when that version satisfies the manifest's specifier:
remote experiments then run the library versions local ones do, and the spec (hence Modal's layer
cache, which is keyed by the image definition) changes only when the requirements or the local
versions do. `image_key` is that content hash, recorded in sandbox tags and logs.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from researchbench.benchmark.tasks.manifest import Requirement

TOKEN_HINT = "run `modal token new` (or set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET)"


@dataclass(frozen=True)
class ImageSpec:
    python_version: str
    packages: tuple[str, ...]  # installed with dependencies
    no_deps: tuple[str, ...]  # installed with --no-deps

    @property
    def key(self) -> str:
        text = json.dumps([self.python_version, self.packages, self.no_deps])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def build(self, modal: Any) -> Any:
        """The modal.Image for this spec; built lazily by Modal (nothing is contacted here)."""
        image = modal.Image.debian_slim(python_version=self.python_version)
        if self.packages:
            image = image.pip_install(*self.packages)
        if self.no_deps:
            image = image.pip_install(*self.no_deps, extra_options="--no-deps")
        return image


def pin(requirement: str) -> str:
    """`name==<local version>` when the local install satisfies the specifier, else the specifier."""
    from packaging.requirements import InvalidRequirement
    from packaging.requirements import Requirement as Parsed

    try:
        parsed = Parsed(requirement)
    except InvalidRequirement:
        return requirement
    if parsed.url or parsed.marker is not None:
        return requirement
    try:
        local = importlib.metadata.version(parsed.name)
    except importlib.metadata.PackageNotFoundError:
        return requirement
    public = local.split("+", 1)[0]  # torch 2.13.0+cpu -> 2.13.0: the remote wheel is the CUDA one
    if parsed.specifier and not parsed.specifier.contains(public, prereleases=True):
        return requirement
    extras = f"[{','.join(sorted(parsed.extras))}]" if parsed.extras else ""
    return f"{parsed.name}{extras}=={public}"


def image_spec(requirements: Sequence[Requirement], extra_pip: Sequence[str] = (),
               python_version: str | None = None) -> ImageSpec:
    version = python_version or f"{sys.version_info.major}.{sys.version_info.minor}"
    packages = [pin(r.pip) for r in requirements if not r.no_deps] + [pin(p) for p in extra_pip]
    no_deps = [pin(r.pip) for r in requirements if r.no_deps]
    return ImageSpec(version, tuple(packages), tuple(no_deps))


def gpu_string(configured: str | None, count: int) -> str | None:
    """Modal's GPU argument: None without GPUs; the configured type ("A100", "H100:2") with the
    task's count appended when the configuration names no count of its own."""
    if count <= 0:
        return None
    kind = (configured or "A100").strip()
    if ":" in kind:
        return kind
    return kind if count == 1 else f"{kind}:{count}"


def modal_credentials_problem(who: str = "executor=modal") -> str:
    """Why Modal would refuse us, found offline: "" when a token id and secret are configured."""
    return "" if modal_token() else f"{who} needs Modal credentials: {TOKEN_HINT}"


def modal_token() -> tuple[str, str] | None:
    """The token id and secret the client would use, or None.

    Reads the same sources the client does (MODAL_TOKEN_ID/SECRET, the active profile of
    ~/.modal.toml or $MODAL_CONFIG_PATH) without importing modal or touching the network.
    """
    if os.environ.get("MODAL_TOKEN_ID") and os.environ.get("MODAL_TOKEN_SECRET"):
        return os.environ["MODAL_TOKEN_ID"], os.environ["MODAL_TOKEN_SECRET"]
    path = Path(os.environ.get("MODAL_CONFIG_PATH") or Path.home() / ".modal.toml")
    try:
        import tomllib

        profiles = tomllib.loads(path.read_text())
    except (OSError, ValueError):
        profiles = {}
    wanted = os.environ.get("MODAL_PROFILE")
    for name, profile in profiles.items():
        if not isinstance(profile, dict):
            continue
        chosen = name == wanted if wanted else (profile.get("active") or len(profiles) == 1)
        if chosen and profile.get("token_id") and profile.get("token_secret"):
            return str(profile["token_id"]), str(profile["token_secret"])
    return None


PROBE_TIMEOUT_S = 5.0  # a hello takes well under a second; a rejected or unreachable client retries for minutes


def modal_unreachable_problem(modal: Any, who: str = "executor=modal", timeout_s: float = PROBE_TIMEOUT_S) -> str:
    """Why Modal did not accept these credentials within `timeout_s`, or "" when it did.

    One hello on a client of its own, closed after: the client would otherwise retry a bad token or a
    dead network for a minute or more before the first job, instead of failing with a line naming the fix.
    """
    import asyncio

    from modal.config import config

    async def hello() -> None:
        await modal.Client.verify.aio(config["server_url"], (config["token_id"], config["token_secret"]))

    try:
        asyncio.run(asyncio.wait_for(hello(), timeout_s))
    except asyncio.TimeoutError:
        reason = f"no answer in {timeout_s:g} s"
    except Exception as exc:  # AuthError, ConnectionError...: the server's own words, first line only
        reason = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}"
    else:
        return ""
    return f"{who}: Modal credentials rejected or unreachable ({reason}): {TOKEN_HINT}, and check the network"
