"""The viewer's web app (Starlette): server-rendered page shells, JSON endpoints the pages poll, and the
viewer's own static files. Everything is read-only over one results folder (benchmark/viewer/catalog.py),
behind benchmark/viewer/security.py's guard.

Pages are rendered by Jinja2 with autoescaping and every value made inert; run data reaches the page as JSON
and the scripts in static/ put it into the document with textContent, never as markup.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from researchbench.benchmark.common.inert_text import inert
from researchbench.benchmark.viewer.catalog import Catalog, RunFolder
from researchbench.benchmark.viewer.compare import compare_json
from researchbench.benchmark.viewer.files import Results
from researchbench.benchmark.scoring.leaderboard import achievement_cell, process_cell
from researchbench.benchmark.viewer.leaderboard_page import board, fmt
from researchbench.benchmark.viewer.rundata import node_json, run_json
from researchbench.benchmark.viewer.security import Guard

HERE = Path(__file__).resolve().parent
NODE_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
MAX_COMPARED = 8
POLL_MS = 2000  # how often an open page asks for news


def valid_run_id(run_id: str) -> bool:
    """A relative posix path without '.', '..' or empty parts (or '.', the results folder being one run)."""
    if run_id == ".":
        return True
    parts = run_id.split("/")
    return 0 < len(run_id) <= 1000 and "\\" not in run_id and "\0" not in run_id and \
        all(part not in ("", ".", "..") for part in parts)


def templates() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined,
                             finalize=lambda value: inert(value) if isinstance(value, str) else value)
    env.globals["fmt"] = fmt
    env.globals["achievement_cell"] = achievement_cell
    env.globals["process_cell"] = process_cell
    return env


class Viewer:
    """The endpoints, over one catalog."""

    def __init__(self, results: Path):
        self.results = Results.open(results)
        self.catalog = Catalog(self.results)
        self.env = templates()
        self.title = Path(results).name or str(results)

    def page(self, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self.env.get_template(name).render(results=self.title, poll_ms=POLL_MS, **context)
        return HTMLResponse(html, status_code=status)

    def folder(self, request: Request) -> RunFolder | Response:
        run_id = request.path_params["run_id"] or "."  # RESULTS itself a run: browsers turn /run/. into /run/
        if not valid_run_id(run_id):
            return JSONResponse({"error": "not a run id (a path inside the results folder)"}, status_code=400)
        folder = self.catalog.get(run_id)
        if folder is None:
            return JSONResponse({"error": "no such run in this results folder"}, status_code=404)
        return folder

    def not_found(self, text: str) -> HTMLResponse:
        return self.page("message.html", status=404, heading="Not found", message=text)

    # ------------------------------------------------------------------ pages
    def runs_page(self, request: Request) -> Response:
        return self.page("runs.html")

    def run_page(self, request: Request) -> Response:
        folder = self.folder(request)
        if not isinstance(folder, RunFolder):
            return self.not_found(f"no run {request.path_params['run_id']!r} in this results folder")
        return self.page("run.html", run_id=folder.id, row=self.catalog.row(folder))

    def compare_page(self, request: Request) -> Response:
        ids = request.query_params.getlist("run")
        if not 2 <= len(ids) <= MAX_COMPARED or not all(valid_run_id(i) and self.catalog.get(i) for i in ids):
            return self.page("message.html", status=400, heading="Pick runs to compare",
                             message=f"choose 2 to {MAX_COMPARED} runs on the runs list, then press Compare")
        return self.page("compare.html", run_ids=ids)

    def leaderboard_page(self, request: Request) -> Response:
        return self.page("leaderboard.html", board=board(self.catalog))

    # ------------------------------------------------------------------ JSON
    def api_runs(self, request: Request) -> Response:
        return JSONResponse({"results": self.title,
                             "runs": [self.catalog.row(f) for f in self.catalog.folders().values()]})

    def api_run(self, request: Request) -> Response:
        folder = self.folder(request)
        return folder if not isinstance(folder, RunFolder) else JSONResponse(run_json(self.catalog, folder))

    def api_node(self, request: Request) -> Response:
        folder = self.folder(request)
        if not isinstance(folder, RunFolder):
            return folder
        node_id = request.path_params["node_id"]
        data = node_json(self.catalog, folder, node_id) if NODE_ID.fullmatch(node_id) else None
        return JSONResponse(data) if data is not None else JSONResponse({"error": "no such finished node"},
                                                                          status_code=404)

    def api_compare(self, request: Request) -> Response:
        ids = request.query_params.getlist("run")
        if not 1 <= len(ids) <= MAX_COMPARED or not all(valid_run_id(i) for i in ids):
            return JSONResponse({"error": f"pass 1 to {MAX_COMPARED} run ids as ?run=...&run=..."}, status_code=400)
        folders = [self.catalog.get(i) for i in ids]
        if any(f is None for f in folders):
            return JSONResponse({"error": "no such run in this results folder"}, status_code=404)
        return JSONResponse(compare_json(self.catalog, [f for f in folders if f is not None]))


def create_app(results: Path, token: str | None = None, allowed_hosts: set[str] | None = None) -> Guard:
    """The viewer over `results`; with a `token`, every request must carry it; with `allowed_hosts`, requests
    naming another Host are refused."""
    viewer = Viewer(results)
    routes = [
        Route("/", viewer.runs_page),
        Route("/run/{run_id:path}", viewer.run_page),
        Route("/compare", viewer.compare_page),
        Route("/leaderboard", viewer.leaderboard_page),
        Route("/api/runs", viewer.api_runs),
        Route("/api/run/{run_id:path}", viewer.api_run),
        Route("/api/node/{node_id}/{run_id:path}", viewer.api_node),
        Route("/api/compare", viewer.api_compare),
        Mount("/static", StaticFiles(directory=HERE / "static", follow_symlink=False), name="static"),
    ]
    return Guard(Starlette(routes=routes), token, allowed_hosts)
