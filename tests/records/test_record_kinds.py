"""The journal's typed, versioned records (benchmark/records/kinds.py): one writer, one reader, every kind
documented, and a journal written before the format had a version read through the same reader."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from researchbench.benchmark.records.journal import Journal, Node, read_records
from researchbench.benchmark.records.kinds import (FORMAT, KINDS, Abandoned, Aborted, BadRecord, Checkpoint, Final,
                                                   Finished, Header, Pending, PolicyCrash, parse, parse_lines)

FROZEN = Path(__file__).parents[1] / "fixtures" / "journals" / "format0-openevolve-fairness.jsonl.gz"
DOC = Path(__file__).resolve().parents[2] / "docs" / "records.md"

EXAMPLES = [
    Header(config_hash="abc", created_at=1.0, provenance={"seed": 0, "task": "toy"}),
    Pending(id="0001", step=1, operator="improve", at=2.0, parents=["0000"], hints={"island": 1}, tag="t",
            policy={"agenda": []}),
    Pending(id="0000", step=0, operator="baseline", at=1.5),
    Finished(Node(id="0001", step=1, operator="improve", status="ok", primary=0.5, files={"model.py": "ab"}),
             Checkpoint(policy={"agenda": []}, counters={"experiments": 1}, usage={"calls": 1})),
    Abandoned(id="0002", reason="used the budget", at=3.0),
    PolicyCrash(where="observe", traceback="Traceback ...", at=4.0),
    Aborted(cause="the executor failed", fix="check the install", source="executor", at=5.0, details="x"),
    Final(stop_reason="used the budget", at=6.0, baseline={"node": "0000", "primary": 0.1}, best={"node": "0001",
                                                                                                 "primary": 0.4}),
]


@pytest.mark.parametrize("record", EXAMPLES, ids=lambda r: r.KIND)
def test_every_kind_round_trips_through_its_json(record) -> None:
    assert parse(json.loads(json.dumps(record.to_json()))) == record


def test_every_kind_is_documented_with_its_fields() -> None:
    doc = DOC.read_text()
    assert set(KINDS) == {r.KIND for r in EXAMPLES}
    for kind in KINDS:
        assert f"### `{kind}`" in doc, f"docs/records.md does not document the {kind} record"


def test_the_writer_appends_typed_records_and_the_reader_gives_them_back(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl")
    for record in EXAMPLES:
        journal.append(record)
    records, torn = read_records(journal.path)
    assert records == EXAMPLES and not torn
    assert json.loads(journal.path.read_text().splitlines()[0])["format"] == FORMAT
    loaded = journal.load()
    assert loaded.header == EXAMPLES[0] and [n.id for n in loaded.nodes] == ["0001"]
    assert [p.id for p in loaded.pending] == ["0000"]  # 0001 finished, 0002 was never pending
    assert loaded.final == EXAMPLES[-1] and loaded.aborted == EXAMPLES[6] and loaded.next_step == 2


def test_a_torn_last_line_is_left_out_by_readers_and_cut_only_by_a_resume(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl")
    journal.append(EXAMPLES[0])
    with open(journal.path, "ab") as fh:
        fh.write(b'{"kind":"pending","id":"00')
    size = journal.path.stat().st_size
    records, torn = read_records(journal.path)
    assert records == [EXAMPLES[0]] and torn and journal.path.stat().st_size == size  # a reader never writes
    journal.load()
    assert journal.path.read_bytes().endswith(b"}\n")  # the engine, resuming, cuts it


def test_a_bad_line_is_named_an_unknown_kind_is_skipped() -> None:
    lines = b'{"kind":"header","config_hash":"a","created_at":1}\n{"kind":"from_the_future","x":1}\n' \
            b'{"kind":"pending","id":7}\nnot json\n'
    got = list(parse_lines(lines))
    assert isinstance(got[0][1], Header) and got[1][1] is None
    assert [n for n, r in got if isinstance(r, BadRecord)] == [3, 4]


def test_a_journal_written_before_the_format_had_a_version_reads_through_the_same_reader(tmp_path: Path) -> None:
    """A real run's journal from before the typed records (format 0: no `format` in its header)."""
    records, torn = read_records(FROZEN)
    header = records[0]
    assert isinstance(header, Header) and header.format == 0 and header.provenance["task"] == "fairness" and not torn
    finished = [r for r in records if isinstance(r, Finished)]
    assert len(finished) == 11 and all(isinstance(r.node, Node) and r.node.files for r in finished)
    final = next(r for r in records if isinstance(r, Final))
    assert final.score("best") is not None and final.best["node"] == "0006"
    plain = tmp_path / "journal.jsonl"
    plain.write_bytes(gzip.decompress(FROZEN.read_bytes()))
    loaded = Journal(plain).load()  # what a resume of that run reads
    assert len(loaded.nodes) == 11 and loaded.pending == [] and loaded.final == final
    assert loaded.checkpoint is not None and loaded.checkpoint.counters["experiments"] == 10
