"""The live viewer of runs, `researchbench view [RESULTS]`: a local, read-only web page over a results folder.

`main(argv)` is the entry point (the `researchbench` front door and `python -m researchbench view` call it). One
job per module: `cli` (arguments, the port, serving), `app` (routes and pages), `security` (GET only, Host,
token, CSP), `files` (reads confined to RESULTS), `catalog` (finding runs, the runs list), `journal_view` (a
tolerant incremental journal reader), `status` (running/finished/aborted/interrupted), `rundata` (a run and a
node as JSON), `compare` (runs side by side), `leaderboard_page` (scoring's leaderboard as a page).

May import: `researchbench.benchmark.scoring`, `researchbench.benchmark.plugins`, `researchbench.benchmark.records`, `researchbench.benchmark.llm`, `researchbench.benchmark.tasks`,
`researchbench.benchmark.common`; never the engine. Starlette, uvicorn and Jinja2 (the `view` extra) load only when it serves.
"""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """Serve the viewer until Ctrl-C (benchmark/viewer/cli.py); 0 when stopped, 2 on bad input."""
    from researchbench.benchmark.viewer.cli import main as serve

    return serve(argv)


__all__ = ["main"]
