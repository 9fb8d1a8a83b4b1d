"""A loopback OpenAI-compatible chat server for LLM tests: scripted failures, counted hits, no network.

Tests queue behaviours (``server.script(...)``); each POST to ``.../chat/completions`` consumes the
next one, and once the queue is empty ``server.default`` answers. Every request is counted in
``server.hits`` and its JSON body kept in ``server.requests``, so retry counts are measured at the
wire rather than trusted from the client.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

KINDS = ("ok", "400", "401", "429", "500", "503", "hang", "empty", "malformed", "no_choices")


@dataclass(frozen=True)
class Behaviour:
    """One scripted answer. ``kind`` is one of KINDS; ``content`` is the reply text for "ok"."""

    kind: str
    content: str = "stub reply"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown stub behaviour {self.kind!r}; expected one of {KINDS}")


def ok(content: str = "stub reply") -> Behaviour:
    return Behaviour("ok", content)


BAD_REQUEST = Behaviour("400")
UNAUTHORIZED = Behaviour("401")
RATE_LIMIT = Behaviour("429")
SERVER_ERROR = Behaviour("500")
UNAVAILABLE = Behaviour("503")
HANG = Behaviour("hang")
EMPTY = Behaviour("empty")
MALFORMED = Behaviour("malformed")
NO_CHOICES = Behaviour("no_choices")


def completion_body(content: str, model: str) -> dict[str, Any]:
    """The standard chat.completion JSON, with fixed usage so tests can assert token counts."""
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


class StubLLMServer:
    """ThreadingHTTPServer on 127.0.0.1 with an ephemeral port; ``url`` is the api_base to use."""

    def __init__(self, hang_s: float = 30.0, port: int = 0) -> None:
        self.default = ok()
        self.hang_s = hang_s
        self.hits = 0
        self.requests: list[dict[str, Any]] = []
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())  # 0: any free port
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="stub-llm", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next requests, in order."""
        with self._lock:
            self._queue.extend(behaviours)

    def always(self, behaviour: Behaviour) -> None:
        """Answer every request with ``behaviour`` once the queue is drained."""
        self.default = behaviour

    def start(self) -> "StubLLMServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release hanging handlers first so shutdown does not wait on them, then close the socket."""
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "StubLLMServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self, body: dict[str, Any]) -> Behaviour:
        with self._lock:
            self.hits += 1
            self.requests.append(body)
            return self._queue.popleft() if self._queue else self.default

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
                pass

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                try:
                    self._answer(server._next(body), str(body.get("model", "test-model")))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) before we answered: expected for "hang"

            def _answer(self, b: Behaviour, model: str) -> None:
                if b.kind == "ok":
                    self._send(200, completion_body(b.content, model))
                elif b.kind in ("400", "401", "429", "500", "503"):
                    self._send(int(b.kind), {"error": {"message": f"stub {b.kind}", "type": "stub"}})
                elif b.kind == "hang":
                    server._stopping.wait(server.hang_s)
                    self._send(200, completion_body("too late", model))
                elif b.kind == "empty":
                    self._send(200, completion_body("", model))
                elif b.kind == "malformed":
                    self._send_raw(200, b'{"id": "chatcmpl-stub", "choices": [ {not json')
                else:  # no_choices
                    body = completion_body("", model)
                    del body["choices"]
                    self._send(200, body)

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                self._send_raw(status, json.dumps(payload).encode())

            def _send_raw(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

        return Handler


@pytest.fixture
def llm_server() -> Iterator[StubLLMServer]:
    """A started stub server, stopped after the test."""
    with StubLLMServer() as server:
        yield server


# A live call with a real price: litellm's price map knows gpt-4o-mini, so a call the stub answers costs
# its fixed usage (11 prompt + 7 completion tokens) at that price. Mock and scripted replies cost nothing,
# so tests of USD caps and cost reporting use this.
PRICED_MODEL = "openai/gpt-4o-mini"
PRICED_CALL_USD = 11 * 0.15e-6 + 7 * 0.6e-6


def priced_overrides(server: StubLLMServer, key_env: str = "STUB_KEY") -> list[str]:
    """Run overrides for a live, priced LLM answered by `server` (set `key_env` in the environment)."""
    return ["llm=openai_compatible", f"llm.model={PRICED_MODEL}", f"llm.api_base={server.url}",
            f"llm.api_key_env={key_env}", "llm.retry_backoff_s=0.01"]
