"""Issue 14 #7: a single 200 MB line in an NDJSON feed is ONE quarantined record with a
truncated ``_raw`` — it used to end the run with DuckDB's OutOfMemoryException (and the
binder re-joined the line chunk by chunk: 10 s, 700 MB). The file is written here, in
``tmp_path``; the long-line detector and the binder's counter are also checked against a
plain ``split`` on small inputs with the limit lowered."""

from __future__ import annotations

import importlib
import json
import random

import duckdb
import pytest

from sluicegate.engines import duckdb_inputs
from sluicegate.run.bind import LineCounter, count_lines
from tests.conftest import run_cli

pytestmark = pytest.mark.duckdb

CONTRACT = (
    "name: events\n"
    "source: {path: land, format: ndjson, columns: {id: BIGINT, amount: INTEGER}}\n"
    "rules: [{name: pos, expect: amount > 0}]\n"
    "gate: {warn_above: 0.9, fail_above: 0.95}\n"
    "outputs: {warehouse: wh.duckdb, clean: ev, quarantine: dlq}\n"
)
LONG = 200 << 20


def test_a_200_mb_line_is_one_quarantined_record_not_a_crash(tmp_path):
    (tmp_path / "land").mkdir()
    with open(tmp_path / "land" / "a.json", "w", encoding="ascii") as f:
        f.write('{"id":1,"amount":5}\n{"id":2,"amount":"')
        block = "x" * (1 << 20)
        for _ in range(LONG >> 20):
            f.write(block)
        f.write('"}\n{"id":3,"amount":7}\n')
    (tmp_path / "c.yml").write_text(CONTRACT)
    r = run_cli("run", str(tmp_path / "c.yml"), "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    ledger = json.loads(r.stdout)["ledger"]
    assert (ledger["raw"], ledger["clean"], ledger["quarantined"]) == (3, 2, 1)
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT id FROM ev ORDER BY id").fetchall() == [(1,), (3,)]
        [(reason, line, raw)] = con.execute(
            "SELECT _reason, _source_line, _raw FROM dlq"
        ).fetchall()
    finally:
        con.close()
    assert (reason, line) == ("corrupt_record", 2)
    assert raw.startswith('{"id":2,"amount":"xxx') and len(raw) < 8192
    assert f"line_too_long: {LONG + 20:,} bytes" in raw  # the whole line's size


def _longest(data: bytes) -> int:
    return max(len(x) for x in data.split(b"\n"))


def test_the_long_line_detector_agrees_with_a_plain_split(tmp_path):
    rng = random.Random(14)
    p = tmp_path / "f"
    for _ in range(300):
        data = b"".join(
            rng.choice([b"\n", b"ab", b"x" * rng.randint(0, 40), b"\n\n"]) for _ in range(30)
        )
        p.write_bytes(data)
        limit = rng.randint(1, 40)
        assert duckdb_inputs.has_long_line(str(p), limit) == (_longest(data) > limit), (data, limit)


def test_split_bytes_keeps_short_lines_and_cuts_long_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(duckdb_inputs, "KEEP_BYTES", 3)
    p = tmp_path / "f"
    p.write_bytes(b'{"a":1}\n' + b"y" * 50 + b"\n\n  \n" + b'{"b":2}')
    rows = duckdb_inputs.split_bytes(str(p), limit=20)
    assert [(r["_source_line"], r["_bad_utf8"]) for r in rows] == [
        (1, False),
        (2, True),
        (5, False),
    ]
    assert rows[1]["_line"].startswith("yyy…") and "50 bytes" in rows[1]["_line"]
    assert [rows[0]["_line"], rows[2]["_line"]] == ['{"a":1}', '{"b":2}']


def test_the_binder_counts_a_line_fed_in_many_chunks_like_the_whole(monkeypatch):
    monkeypatch.setattr(importlib.import_module("sluicegate.run.bind"), "SQUEEZE_ABOVE", 4)
    rng = random.Random(7)
    for _ in range(300):
        data = b"".join(
            rng.choice([b"\n", b" ", b"\t", b"\r\n", b"x" * rng.randint(1, 30), b"\xef\xbb\xbf"])
            for _ in range(20)
        )
        c = LineCounter()
        i = 0
        while i < len(data):
            n = rng.randint(1, 9)
            c.feed(data[i : i + n])
            i += n
        assert c.finish() == count_lines(data), data
