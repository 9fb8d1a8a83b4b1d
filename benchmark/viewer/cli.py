"""`researchbench view [RESULTS]`: parse the arguments, check them, bind the port, print the address, serve
until Ctrl-C. Bad input is one line naming the fix and exit 2, never a traceback.

It listens on 127.0.0.1 unless `--host` names another interface; then every request must carry a random
token, printed once at start inside the address to open.
"""

from __future__ import annotations

import argparse
import errno
import secrets
import socket
import sys
import webbrowser
from pathlib import Path

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
INSTALL = "pip install -c requirements/lock.txt -e '.[view]'"


class ViewError(Exception):
    """One line for the user; exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]  # one line, exit 2, no usage dump
        raise ViewError(f"{message} (see researchbench view --help)")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="researchbench view", description="A live, read-only viewer of runs in a "
                                "local web page: the runs list, each run's search tree as it grows, runs side by "
                                "side and the leaderboard of a folder of recordings (docs/viewer.md).")
    p.add_argument("results", nargs="?", default="results", type=Path,
                   help="the results folder (default: results); e.g. examples/recorded for the leaderboard")
    p.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765; 0: any free port)")
    p.add_argument("--host", default="127.0.0.1",
                   help="interface to listen on (default 127.0.0.1, this machine only); any other requires the "
                        "access token printed at start")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser; just print the address")
    return p


def _bind(host: str, port: int) -> socket.socket:
    if not 0 <= port <= 65535:
        raise ViewError(f"--port {port} is not a port; pass one from 1 to 65535 (or 0 for any free port)")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        raise ViewError(f"--host {host} is not an address of this machine; pass an interface's address such as "
                        "127.0.0.1 or 0.0.0.0") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ViewError(f"port {port} is in use (another viewer?); pass --port {port + 1}, or --port 0 for any "
                            "free port") from None
        if exc.errno == errno.EACCES:
            raise ViewError(f"port {port} needs privileges; pass --port 8765 or another above 1023") from None
        raise ViewError(f"cannot listen on {host}:{port} ({exc.strerror}); pass another --host or --port") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _url(host: str, port: int, token: str | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


def main(argv: list[str] | None = None) -> int:
    """Serve the viewer until Ctrl-C; 0 when stopped, 2 on bad input (one line on stderr)."""
    try:
        args = parser().parse_args(sys.argv[1:] if argv is None else argv)
        try:
            import uvicorn

            from researchbench.benchmark.viewer.app import create_app
        except ImportError as exc:
            raise ViewError(f"the viewer needs {exc.name or 'starlette and uvicorn'}: {INSTALL}") from None
        results: Path = args.results
        if not results.is_dir():
            hint = "" if results.exists() else " (no such folder)"
            raise ViewError(f"{results} is not a results folder{hint}; pass the folder your runs wrote into, "
                            "e.g. researchbench view results")
        local = args.host in LOOPBACK
        token = None if local else secrets.token_urlsafe(24)
        sock = _bind(args.host, args.port)
    except ViewError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    port = sock.getsockname()[1]
    allowed = {f"{name}:{port}" for name in ("127.0.0.1", "localhost", "[::1]")} if local else None
    app = create_app(results, token=token, allowed_hosts=allowed)
    shown_host = "127.0.0.1" if args.host == "localhost" else args.host
    url = _url(shown_host, port, token)
    print(f"researchbench view: serving {results} read-only at {url}", flush=True)
    if token:
        print("  listening beyond this machine: every request needs the token in that address (shown once)",
              flush=True)
    print("  press Ctrl-C to stop", flush=True)
    if not args.no_browser:
        webbrowser.open(url)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return 0
