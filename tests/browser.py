"""Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`), for tests that
watch a live page change: open a URL, evaluate JavaScript, wait for a condition, click, take a screenshot.

Why not `--dump-dom` (tests/scoring/test_scoring_report.py): that loads a page once and prints it; a page that polls
must be watched while the data behind it changes. Debian's chromium speaks the protocol on file descriptors 3
(commands in) and 4 (replies and events out), NUL-terminated JSON, so no websocket library or driver is needed.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class BrowserError(Exception):
    pass


def _high(fd: int) -> int:
    """`fd` moved to a number of at least 100 (the old one closed)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100)
    os.close(fd)
    return moved


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, profile: Path, width: int = 1280, height: int = 900):
        if CHROMIUM is None:
            raise BrowserError("chromium is not installed")
        commands_r, self._commands_w = os.pipe()
        self._replies_r, replies_w = os.pipe()
        # the child's ends moved above the low numbers, so putting them on 3 and 4 cannot overwrite either
        commands_r, replies_w = (_high(fd) for fd in (commands_r, replies_w))
        args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
                "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"]
        # a small Python puts the two pipe ends on fds 3 and 4, where chromium expects them, then becomes chromium
        # (dash, the usual /bin/sh, cannot duplicate descriptors above 9)
        place = "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); os.execv(sys.argv[3], sys.argv[3:])"
        self.proc = subprocess.Popen([sys.executable, "-c", place, str(commands_r), str(replies_w), *args],
                                     pass_fds=(commands_r, replies_w), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(commands_r)
        os.close(replies_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=True)
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                         "mobile": False}, session=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.proc.kill()
            self.proc.wait(timeout=30)
        finally:
            for fd in (self._commands_w, self._replies_r):
                try:
                    os.close(fd)
                except OSError:
                    pass

    # ------------------------------------------------------------------ the protocol
    def send(self, method: str, params: dict[str, Any] | None = None, session: bool = False,
             timeout: float = 120.0) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._commands_w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._replies_r], [], [], left)[0]:
                raise BrowserError("chromium did not answer in time")
            chunk = os.read(self._replies_r, 1 << 16)
            if not chunk:
                raise BrowserError("chromium closed its pipe (it crashed or was killed)")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    # ------------------------------------------------------------------ what a test does
    def open(self, url: str) -> None:
        self.send("Page.navigate", {"url": url}, session=True)
        self.wait_for("document.readyState === 'complete'")

    def eval(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 60.0) -> None:
        """Poll `expression` until it is truthy in JavaScript (generous deadlines: tests assert behaviour, not
        speed). It is tested in the page (`!!`), since a DOM node does not come back by value."""
        deadline = time.monotonic() + timeout
        while True:
            if self.eval(f"!!({expression})") is True:
                return
            if time.monotonic() > deadline:
                raise BrowserError(f"still false after {timeout:.0f} s: {expression}")
            time.sleep(0.1)

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def problems(self) -> list[str]:
        """Script errors and console errors (a CSP violation is one) the page reported so far."""
        found = []
        for event in self.events:
            params = event.get("params", {})
            if event.get("method") == "Runtime.exceptionThrown":
                found.append(str(params.get("exceptionDetails", {}).get("text")))
            elif event.get("method") == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(str(params["entry"].get("text")))
            elif event.get("method") == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append(" ".join(str(a.get("value", a.get("description"))) for a in params.get("args", [])))
        return found
