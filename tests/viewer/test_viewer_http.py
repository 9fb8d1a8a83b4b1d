"""The viewer over HTTP (Starlette's TestClient, no browser): every endpoint, the run status it derives, what
it refuses (other methods, traversal, links out of RESULTS, a missing token, a foreign Host), the headers that
keep pages inert, the vendored chart library's digests, and the command's one-line errors (docs/viewer.md)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from researchbench.benchmark.records import owner
from researchbench.benchmark.viewer import main
from researchbench.benchmark.viewer.app import create_app
from researchbench.benchmark.viewer.catalog import Catalog
from researchbench.benchmark.viewer.files import Results
from researchbench.benchmark.viewer.journal_view import JournalView
from researchbench.benchmark.viewer.security import CSP
from researchbench.benchmark.viewer.status import derive
from conftest import FIXTURES, finished_at_least, kill_run_when
from viewer_kit import CONTROL, XSS, append_node, finished_runs, live_run, served

VENDOR = Path(__file__).resolve().parents[2] / "benchmark" / "viewer" / "static" / "vendor"


@pytest.fixture
def results(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    finished_runs(root)
    live = live_run(root)
    owner.claim(live)  # this test process: alive
    return root


@pytest.fixture
def client(results: Path) -> TestClient:
    return TestClient(create_app(results))


def test_the_runs_list_has_every_run_with_its_columns(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "<table id=\"runs\"" in page.text
    rows = {r["id"]: r for r in client.get("/api/runs").json()["runs"]}
    assert set(rows) == {"aide/toy/seed0-6", "greedy/toy/seed0-6", "react/toy/seed1-6"}
    aide = rows["aide/toy/seed0-6"]
    assert (aide["agent"], aide["task"], aide["seed"], aide["status"], aide["group"]) == ("aide", "toy", 0, "finished",
                                                                                        "aide/toy")
    assert (aide["experiments"], aide["budget_experiments"], aide["best_val"], aide["test"]) == (5, 6, 4.0, 5.0)
    assert aide["cost"] == "$0.3000" and aide["nodes"] == 7
    assert rows["react/toy/seed1-6"]["status"] == "running"


def test_a_run_page_and_its_json_follow_a_growing_journal(client: TestClient, results: Path) -> None:
    run_id = "react/toy/seed1-6"
    page = client.get(f"/run/{run_id}")
    assert page.status_code == 200 and f'data-run-id="{run_id}"' in page.text
    data = client.get(f"/api/run/{run_id}").json()
    assert [n["id"] for n in data["nodes"]] == ["0000", "0001", "0002"] and data["pending"] == []
    assert [p["best"] for p in data["curve"]] == [10.0, 8.0, 8.0]  # lower is better; 0002 is buggy
    assert [p["x"] for p in data["curve"]] == [0, 1, 2]
    run_dir = results / run_id
    append_node(run_dir, "0003", "0001", 3.0, pending_only=True)
    data = client.get(f"/api/run/{run_id}").json()
    assert [p["id"] for p in data["pending"]] == ["0003"] and data["row"]["in_flight"] == 1
    with open(run_dir / "journal.jsonl", "a") as fh:
        fh.write('{"kind": "finished", "node": {"id": "00')  # a line the run is still writing: not read yet
    assert len(client.get(f"/api/run/{run_id}").json()["nodes"]) == 3
    with open(run_dir / "journal.jsonl", "rb+") as fh:  # the writer's line, undone (the real writer is atomic)
        data_ = fh.read()
        fh.seek(0)
        fh.truncate()
        fh.write(data_[:data_.rfind(b"\n") + 1])
    append_node(run_dir, "0003", "0001", 3.0)
    data = client.get(f"/api/run/{run_id}").json()
    assert [n["id"] for n in data["nodes"]][-1] == "0003" and data["pending"] == []
    assert data["curve"][-1]["best"] == 3.0


def test_a_node_in_full_keeps_hostile_text_as_inert_text(client: TestClient) -> None:
    node = client.get("/api/node/0001/react/toy/seed1-6")
    assert node.status_code == 200
    data = node.json()
    assert XSS in data["texts"]["Plan"] and XSS in data["stdout"]  # the markup as characters, for textContent
    for char in "\x1b\x00\x07\x9b":
        assert char not in node.text and char not in data["texts"]["Plan"]
    assert data["files"] == ["model.py"] and data["diff"].startswith("--- a")
    assert node.headers["content-type"] == "application/json"
    aide = client.get("/api/node/0001/aide/toy/seed0-6").json()
    (call,) = aide["llm_calls"]
    assert call["messages"] == [{"role": "user", "content": "improve 0001"}] and call["response"] == "reply for 0001"
    assert call["cost"] == "$0.1" and call["head"]["model"] == "m"
    assert client.get("/api/node/0099/aide/toy/seed0-6").status_code == 404


def test_hostile_run_fields_are_escaped_in_server_rendered_pages(results: Path) -> None:
    run_dir = results / "aide" / "toy" / "seed0-6"
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["agent"] = f"{XSS}{CONTROL}"
    (run_dir / "summary.json").write_text(json.dumps(summary))
    page = TestClient(create_app(results)).get("/run/aide/toy/seed0-6").text
    assert "<script>document" not in page and "<img src=x" not in page
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in page
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", page)
    assert all(' src="/static/' in tag for tag in re.findall(r"<script[^>]*>", page))  # no inline script
    assert "style=" not in page and " on" not in re.sub(r"&[a-z#0-9]+;", "", page).split("<body")[1].split(">")[0]


def test_compare_and_its_best_diffs(client: TestClient) -> None:
    ids = ["aide/toy/seed0-6", "greedy/toy/seed0-6"]
    page = client.get("/compare", params=[("run", i) for i in ids])
    assert page.status_code == 200 and all(f'data-run-id="{i}"' in page.text for i in ids)
    data = client.get("/api/compare", params=[("run", i) for i in ids]).json()
    assert [r["row"]["agent"] for r in data["runs"]] == ["aide", "greedy"] and data["notes"] == []
    aide, greedy = (r["best_diff"] for r in data["runs"])
    assert "-x = 1\n+a = 4\n" in aide and "(node 0003)" in aide  # the best node's files against the baseline's
    assert "+a = 4\n" in greedy
    assert client.get("/compare", params=[("run", ids[0])]).status_code == 400  # one run is no comparison
    assert client.get("/api/compare", params=[("run", "nope")]).status_code == 404


def test_the_leaderboard_page_is_scorings_leaderboard_over_the_recordings() -> None:
    from researchbench.benchmark.plugins.manager import get_registry
    from researchbench.benchmark.scoring.leaderboard import achievement_cell, entries, process_cell, standings
    from researchbench.benchmark.tasks.manifest import load_task

    recorded = Path(__file__).resolve().parents[2] / "examples" / "recorded"
    page = TestClient(create_app(recorded)).get("/leaderboard")
    assert page.status_code == 200
    tasks = get_registry().tasks
    rows = entries(recorded, tasks)
    assert rows and all(f">{r.where}</a>" in page.text for r in rows)
    ranked, stale = standings(rows, {r.task: load_task(tasks[r.task]).version for r in rows})
    assert sum(len(board) for _, board in ranked) >= 10
    for _, board in ranked:  # the same numbers as docs/leaderboard.md
        for s in board:
            assert f'<td class="num">{s.test:.4g}</td>' in page.text
            assert achievement_cell(s) in page.text and process_cell(s) in page.text
    after = page.text.split("Recorded on an earlier version of the task")[1] if stale else ""
    assert all(r.where in after for r in stale)


def test_a_single_run_folder_is_served_as_one_run(tmp_path: Path) -> None:
    run_dir = finished_runs(tmp_path)[0]
    client = TestClient(create_app(run_dir))
    assert [r["id"] for r in client.get("/api/runs").json()["runs"]] == ["."]
    assert client.get("/run/").status_code == 200  # a browser turns /run/. into /run/
    assert len(client.get("/api/run/").json()["nodes"]) == 7 and client.get("/api/node/0001/").status_code == 200


def test_only_get_and_no_traversal(client: TestClient, results: Path, tmp_path: Path) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        answer = client.request(method, "/api/runs")
        assert answer.status_code == 405 and answer.headers["allow"] == "GET, HEAD"
    (tmp_path / "secret.txt").write_text("SECRET")
    for path in ("/api/run/..%2F..%2Fsecret.txt", "/api/run/aide/toy/..%2F..%2F..", "/api/run/%2E%2E",
                 "/api/run/aide/toy/seed0-6/..%2F..%2F..%2F..%2Fsecret.txt", "/run/..%2F..%2Fsecret.txt",
                 "/api/node/..%2F..%2Fsecret/aide/toy/seed0-6", "/static/..%2F..%2Fapp.py", "/static/%2E%2E/app.py",
                 "/api/run/aide", "/api/run//etc/passwd"):
        answer = client.get(path)
        assert answer.status_code in (400, 404), path
        assert "SECRET" not in answer.text and "import" not in answer.text
    assert client.get("/static/viewer.css").status_code == 200


def test_links_out_of_results_are_not_followed(results: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    finished_runs(outside)
    (results / "linked").symlink_to(outside / "aide")  # a folder of runs outside RESULTS
    run_dir = results / "greedy" / "toy" / "seed0-6"
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-STDOUT")
    node = json.loads((run_dir / "journal.jsonl").read_text().splitlines()[4])["node"]  # 0001's finished record
    blob = run_dir / "blobs" / node["stdout"][:2] / node["stdout"][2:]
    blob.unlink()
    blob.symlink_to(secret)
    client = TestClient(create_app(results))
    ids = {r["id"] for r in client.get("/api/runs").json()["runs"]}
    assert not any(i.startswith("linked") for i in ids)
    assert client.get("/api/run/linked/toy/seed0-6").status_code == 404
    shown = client.get("/api/node/0001/greedy/toy/seed0-6").json()
    assert shown["stdout"] is None and "SECRET" not in json.dumps(shown)  # "not kept", never the outside file
    inside = Results.open(results)
    assert inside.read(blob) is None and inside.read(results / "greedy" / "toy" / "seed0-6" / "summary.json")


def test_security_headers_on_every_answer(client: TestClient) -> None:
    for path in ("/", "/run/aide/toy/seed0-6", "/api/runs", "/static/viewer.css", "/nope", "/api/run/nope"):
        answer = client.get(path)
        assert answer.headers["content-security-policy"] == CSP, path
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert "default-src 'self'" in CSP and "unsafe-inline" not in CSP and "unsafe-eval" not in CSP


def test_a_token_guards_every_request_when_asked(results: Path) -> None:
    client = TestClient(create_app(results, token="s3cret"))
    for path in ("/", "/api/runs", "/static/viewer.css", "/run/aide/toy/seed0-6"):
        assert client.get(path).status_code == 401, path
    assert client.get("/api/runs", params={"token": "wrong"}).status_code == 401
    first = client.get("/", params={"token": "s3cret"})
    assert first.status_code == 200 and "HttpOnly; SameSite=Strict" in first.headers["set-cookie"]
    assert client.get("/api/runs").status_code == 200  # the cookie the first answer set
    fresh = TestClient(create_app(results, token="s3cret"))
    assert fresh.get("/api/runs", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_only_the_local_host_names_are_answered_on_loopback(results: Path) -> None:
    client = TestClient(create_app(results, allowed_hosts={"127.0.0.1:8765", "localhost:8765"}))
    assert client.get("/api/runs").status_code == 421  # Host: testserver, as a rebinding attack would send
    assert client.get("/api/runs", headers={"host": "localhost:8765"}).status_code == 200


def test_status_is_derived_from_the_journal_the_summary_and_the_owner() -> None:
    journal = JournalView()
    me = {"pid": os.getpid(), "host": socket.gethostname(), "start_ticks": owner._start_ticks(os.getpid())}
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = {**me, "pid": int(gone.stdout)}
    assert derive({"status": "running"}, journal, me) == ("running", "")
    assert derive({"status": "interrupted"}, journal, me)[0] == "running"  # resumed, summary not rewritten yet
    assert derive({"status": "running"}, journal, dead)[0] == "interrupted"  # killed hard
    assert derive({"status": "running"}, journal, {**me, "start_ticks": -1})[0] == "interrupted"  # pid reused
    assert derive({"status": "running"}, journal, None)[0] == "unknown"
    assert derive({"status": "running"}, journal, {**me, "host": "elsewhere"})[0] == "running"
    assert derive({"status": "aborted"}, journal, None)[0] == "aborted"
    assert derive({"status": "interrupted"}, journal, dead)[0] == "interrupted"
    assert derive(None, JournalView(final={"kind": "final"}), None)[0] == "finished"
    assert derive(None, JournalView(aborted={"kind": "aborted"}), None)[0] == "aborted"


def test_a_real_run_reads_running_while_it_runs_and_interrupted_once_killed(toy, tmp_path: Path) -> None:
    """The engine names its process in run.pid; a run SIGKILLed mid-search keeps `running` in its summary,
    and the viewer says interrupted instead."""
    results = tmp_path / "results"
    seen: list[str] = []

    def running_after_one_node(records: list[dict]) -> bool:
        if not finished_at_least(2)(records):
            return False
        catalog = Catalog(Results.open(results))
        seen.extend(catalog.row(f)["status"] for f in catalog.folders().values())
        return True

    kill_run_when(results, ["agent=greedy", "task=toy", "budget.steps=4", "llm=scripted",
                            f"llm.script={FIXTURES / 'scripts' / 'toy'}"], running_after_one_node)
    assert seen == ["running"]
    catalog = Catalog(Results.open(results))
    (row,) = [catalog.row(f) for f in catalog.folders().values()]
    assert row["status"] == "interrupted" and "killed" in row["status_note"]
    assert json.loads(next(results.glob("*/*/*/summary.json")).read_text())["status"] == "running"


def test_the_vendored_chart_library_matches_its_record() -> None:
    record = (VENDOR / "VENDORED.md").read_text()
    rows = re.findall(r"^\| (\S+) \| .* \| ([0-9a-f]{64}) \|$", record, re.M)
    assert {name for name, _ in rows} == {"uPlot.iife.min.js", "uPlot.min.css", "uPlot.LICENSE"}
    for name, digest in rows:
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, name
    assert "MIT License" in (VENDOR / "uPlot.LICENSE").read_text()


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "missing"), "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a results folder (no such folder)" in err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main([str(tmp_path), "--port", str(port), "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: port {port} is in use (another viewer?); pass --port {port + 1}, or --port 0 for any free port\n"
    assert main([str(tmp_path), "--port", "70000"]) == 2 and "is not a port" in capsys.readouterr().err
    assert main([str(tmp_path), "--bogus"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unrecognized arguments: --bogus" in err
    assert main([str(tmp_path), "--host", "no.such.host.invalid"]) == 2
    assert "is not an address of this machine" in capsys.readouterr().err


def test_without_its_extra_the_command_says_how_to_install_it(tmp_path: Path, monkeypatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as if the `view` extra were not installed
    assert main([str(tmp_path), "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert err == "error: the viewer needs uvicorn: pip install -c requirements/lock.txt -e '.[view]'\n"


def test_python_m_benchmark_viewer_serves_until_ctrl_c(results: Path) -> None:
    with served(results) as url:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url)
        with urllib.request.urlopen(url + "api/runs", timeout=60) as answer:
            assert len(json.loads(answer.read())["runs"]) == 3
            assert answer.headers["content-security-policy"] == CSP


def test_another_interface_needs_the_token_printed_once(results: Path) -> None:
    with served(results, "--host", "0.0.0.0") as url:
        token = re.fullmatch(r"http://0\.0\.0\.0:(\d+)/\?token=([\w-]{20,})", url)
        assert token, url
        base = f"http://127.0.0.1:{token.group(1)}/"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base + "api/runs", timeout=60)
        assert refused.value.code == 401
        with urllib.request.urlopen(f"{base}api/runs?token={token.group(2)}", timeout=60) as answer:
            assert answer.status == 200
