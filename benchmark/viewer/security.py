"""What every request and response of the viewer goes through: GET only, the Host header (against DNS
rebinding on 127.0.0.1), the access token when the viewer listens beyond this machine, and headers that keep
a page from running anything but the viewer's own scripts.

The Content-Security-Policy allows scripts, styles and data only from the viewer itself (`'self'`): no inline
script or style, no eval, no other origin; images only from itself or data: URIs. So even a string of run data
that reached the page as markup could neither run nor load anything.
"""

from __future__ import annotations

import hmac
from http.cookies import SimpleCookie
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
           (b"referrer-policy", b"no-referrer"), (b"x-frame-options", b"DENY"), (b"cache-control", b"no-store"),
           (b"cross-origin-opener-policy", b"same-origin"), (b"cross-origin-resource-policy", b"same-origin")]
TOKEN_COOKIE = "researchbench_view_token"

Scope = dict[str, Any]
ASGI = Callable[[Scope, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable[None]]


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


def presented_token(scope: Scope) -> tuple[str, bool]:
    """The token a request carries (query `token`, `Authorization: Bearer`, or the cookie) and whether it came
    in the query (then the response sets the cookie, so the page's own requests carry it)."""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
    if query:
        return query[0], True
    auth = _header(scope, b"authorization")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip(), False
    cookie = SimpleCookie()
    try:
        cookie.load(_header(scope, b"cookie"))
    except Exception:  # a malformed cookie header is no token
        return "", False
    return (cookie[TOKEN_COOKIE].value if TOKEN_COOKIE in cookie else ""), False


class Guard:
    """ASGI middleware: refuses what the viewer never serves and adds the security headers to every answer."""

    def __init__(self, app: ASGI, token: str | None, allowed_hosts: set[str] | None):
        self.app, self.token, self.allowed_hosts = app, token, allowed_hosts

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # websockets: not served
        set_cookie = False
        if scope["method"] not in ("GET", "HEAD"):
            return await _plain(send, 405, "the viewer is read-only: only GET", [(b"allow", b"GET, HEAD")])
        if self.allowed_hosts is not None and _header(scope, b"host").lower() not in self.allowed_hosts:
            return await _plain(send, 421, "unexpected Host header: open the address the viewer printed")
        if self.token is not None:
            given, set_cookie = presented_token(scope)
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return await _plain(send, 401, "this viewer needs its token: open the address with ?token= that "
                                               "it printed at start")

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() not in dict(HEADERS)]
                headers += HEADERS
                if set_cookie and self.token is not None:
                    headers.append((b"set-cookie", f"{TOKEN_COOKIE}={self.token}; HttpOnly; SameSite=Strict; "
                                                   f"Path=/".encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _plain(send: Any, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *HEADERS, *(extra or [])]})
    await send({"type": "http.response.body", "body": body})
