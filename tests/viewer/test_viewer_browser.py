"""The viewer in a real browser (headless Chromium over the DevTools pipe, tests/browser.py), served as a user
starts it: the runs list, a run page that grows while its run goes on, a hostile plan shown as text, runs side by
side, and the leaderboard of examples/recorded; no script error and no CSP violation on any page."""

from __future__ import annotations

from pathlib import Path

import pytest

from researchbench.benchmark.records import owner
from browser import CHROMIUM, Browser
from viewer_kit import CONTROL, HOSTILE_PLAN, XSS, append_node, finished_runs, live_run, served

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install -y chromium)")
RECORDED = Path(__file__).resolve().parents[2] / "examples" / "recorded"


def test_a_running_run_grows_on_its_page_and_hostile_text_stays_text(tmp_path: Path) -> None:
    results = tmp_path / "results"
    finished_runs(results)
    run_dir = live_run(results)
    owner.claim(run_dir)
    with served(results) as url, Browser(tmp_path / "profile") as page:
        page.open(url)
        page.wait_for("document.querySelectorAll('#runs tr[data-run-id]').length === 3")
        assert page.eval("document.querySelector('tr[data-run-id=\"react/toy/seed1-6\"] .badge').textContent") == "running"
        page.eval("document.getElementById('filter').value = 'greedy';"
                  "document.getElementById('filter').dispatchEvent(new Event('input'))")
        assert page.eval("document.querySelectorAll('#runs tr[data-run-id]').length") == 1

        page.open(url + "run/react/toy/seed1-6")
        page.wait_for("document.querySelectorAll('#tree button').length === 3")
        assert page.eval("document.getElementById('status').textContent") == "running"
        # the run goes on: a node starts (in flight), then finishes; the open page shows both, no reload
        page.eval("window.notReloaded = true")
        append_node(run_dir, "0003", "0001", 3.0, pending_only=True)
        page.wait_for("document.querySelector('#tree button[data-node=\"0003\"] .status.pending')")
        append_node(run_dir, "0003", "0001", 3.0, plan="the fourth idea")
        page.wait_for("document.querySelector('#tree button[data-node=\"0003\"] .status.ok')")
        page.wait_for("document.querySelector('#tree button[data-node=\"0003\"]').textContent.includes('← best')")
        assert page.eval("window.notReloaded") is True
        assert page.eval("document.querySelectorAll('#tree button').length") == 4
        assert page.eval("document.querySelectorAll('#chart canvas').length") >= 1
        assert page.eval("document.querySelector('.u-legend') !== null")  # uPlot drew the chart with its legend

        page.eval("document.querySelector('#tree button[data-node=\"0001\"]').click()")
        page.wait_for("document.querySelector('#node pre.plan')")
        shown = page.eval("document.querySelector('#node pre.plan').textContent")
        assert HOSTILE_PLAN == f"plan </pre>{XSS}{CONTROL} end"
        assert shown == f"plan </pre>{XSS} end"  # the markup as characters; the escape sequences gone whole
        assert XSS in page.eval("document.querySelector('#node pre.stdout').textContent")
        assert page.eval("document.title") == "react on toy, seed 1 · researchbench view"  # no script ran
        assert page.eval("document.querySelectorAll('#node script, #node img, main img').length") == 0
        page.eval("document.querySelector('#tree button[data-node=\"0003\"]').click()")
        page.wait_for("document.querySelector('#node pre.plan') && "
                      "document.querySelector('#node pre.plan').textContent === 'the fourth idea'")
        assert "1.5 s wall" in page.eval("document.querySelector('#node p.muted').textContent")
        assert page.problems() == []


def test_compare_and_the_recorded_leaderboard_in_the_browser(tmp_path: Path) -> None:
    with served(RECORDED) as url, Browser(tmp_path / "profile") as page:
        page.open(url)
        page.wait_for("document.querySelectorAll('#runs tr[data-run-id]').length >= 15")
        for run_id in ("agents/aide-fairness", "agents/mcts-fairness"):
            page.eval(f"document.querySelector('tr[data-run-id=\"{run_id}\"] input').click()")
        page.eval("document.getElementById('compare').click()")
        page.wait_for("location.pathname === '/compare' && document.querySelector('#chart canvas')")
        assert page.eval("document.querySelectorAll('#summary tr').length") == 3  # header + two runs
        legend = page.eval("document.querySelector('.u-legend').textContent")
        assert "aide" in legend and "mcts" in legend
        page.open(url + "leaderboard")
        assert page.eval("document.querySelectorAll('table.leaderboard tbody tr').length") >= 10
        page.eval("document.querySelector('table.leaderboard a').click()")
        page.wait_for("location.pathname.startsWith('/run/') && document.querySelectorAll('#tree button').length > 5")
        assert page.problems() == []
