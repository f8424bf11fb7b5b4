"""Input binding's canonical forms (docs/contract-reference.md § Input binding), pinned by
fixed vectors: the schema fingerprint, the binding digest, the run id, and the raw record
count taken from the bytes (BOM, CRLF, blank lines)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.contract.models import TableSource
from sluicegate.run import bind as bind_s
from sluicegate.run.bind import Binding, BoundFile, count_lines, schema_fingerprint

# The canonical text, written out by hand: declared order, keys sorted, no spaces,
# canonical upper-case types (int -> INTEGER, decimal(10, 2) -> DECIMAL(10,2), FLOAT -> DOUBLE).
CANONICAL = (
    '[{"name":"sale_id","nullable":false,"type":"VARCHAR"},'
    '{"name":"qty","nullable":true,"type":"INTEGER"},'
    '{"name":"price","nullable":true,"type":"DECIMAL(10,2)"},'
    '{"name":"order_ts","nullable":true,"type":"TIMESTAMP"},'
    '{"name":"score","nullable":true,"type":"DOUBLE"}]'
)
VECTOR = "2617c3e13f63d3535b288bbec515fff10a43c3dca0c08b3cf03fe025daf69bd2"

SPEC = TableSource(
    path="x",
    columns={
        "sale_id": {"type": "varchar", "nullable": False},
        "qty": "int",
        "price": "decimal(10, 2)",
        "order_ts": {"type": "timestamp", "formats": ["%d/%m/%Y %H:%M:%S"]},
        "score": {"type": "FLOAT", "finite": False},
    },
)


def test_the_fixed_vector_is_the_sha256_of_the_canonical_text():
    assert hashlib.sha256(CANONICAL.encode("utf-8")).hexdigest() == VECTOR


def test_schema_fingerprint_matches_the_fixed_vector():
    assert schema_fingerprint(SPEC) == VECTOR


def test_fingerprint_ignores_formats_and_finite_but_not_order_nullability_or_type():
    same = TableSource(
        path="elsewhere",
        columns={
            "sale_id": {"type": "VARCHAR", "nullable": False},
            "qty": "INTEGER",
            "price": "DECIMAL(10,2)",
            "order_ts": "TIMESTAMP",
            "score": "DOUBLE",
        },
    )
    assert schema_fingerprint(same) == VECTOR
    cols = dict(same.columns)
    reordered = TableSource(path="x", columns=dict(reversed(list(cols.items()))))
    assert schema_fingerprint(reordered) != VECTOR
    nullable = TableSource(path="x", columns={**cols, "sale_id": {"type": "VARCHAR"}})
    assert schema_fingerprint(nullable) != VECTOR
    wider = TableSource(path="x", columns={**cols, "price": "DECIMAL(12,2)"})
    assert schema_fingerprint(wider) != VECTOR


def test_binding_digest_fixed_vector():
    files = [
        BoundFile("/feed/a.json", 12, 1.0, hashlib.sha256(b"x").hexdigest(), 1, 0),
        BoundFile("/feed/b.json", 0, 2.0, hashlib.sha256(b"").hexdigest(), 0, 0),
    ]
    text = json.dumps(
        [[f.path, f.size, f.sha256] for f in files], separators=(",", ":"), ensure_ascii=False
    )
    assert hashlib.sha256(text.encode()).hexdigest() == (
        "c1eaa17d3dc7aca8039c5bd2255f3dd832466ba2e1bc206ce6a5792d37d2a756"
    )
    assert (
        Binding(files).digest == "c1eaa17d3dc7aca8039c5bd2255f3dd832466ba2e1bc206ce6a5792d37d2a756"
    )
    # mtime is not content: touching a file does not change the run
    touched = [
        BoundFile(f.path, f.size, f.mtime + 60, f.sha256, f.records, f.blank_lines) for f in files
    ]
    assert Binding(touched).digest == Binding(files).digest


def test_run_id_is_derived_from_name_digest_date_and_binding(tmp_path: Path):
    (tmp_path / "d.json").write_text('{"a":1}\n')
    (tmp_path / "c.yml").write_text(
        json.dumps(
            {
                "name": "rid",
                "source": {"path": "d.json", "columns": {"a": "INTEGER"}},
                "outputs": {"warehouse": "w.duckdb", "clean": "c", "quarantine": "q"},
            }
        )
    )
    loaded = load_contract(tmp_path / "c.yml", logical_date="2024-01-01")
    binding = bind_s.bind(loaded)
    doc = ["rid", loaded.digest, "2024-01-01", binding.digest]
    want = hashlib.sha256(json.dumps(doc, separators=(",", ":")).encode()).hexdigest()[:20]
    assert bind_s.run_id(loaded, binding) == want
    other_day = load_contract(tmp_path / "c.yml", logical_date="2024-01-02")
    assert bind_s.run_id(other_day, binding) != want
    (tmp_path / "d.json").write_text('{"a":2}\n')
    assert bind_s.run_id(loaded, bind_s.bind(loaded)) != want


@pytest.mark.parametrize(
    "data, records, blanks",
    [
        (b"", 0, 0),
        (b"\n", 0, 1),
        (b"a", 1, 0),  # no final LF
        (b"a\nb\n", 2, 0),
        (b"a\r\nb\r\n", 2, 0),  # CRLF
        (b"a\r\n\r\nb", 2, 1),  # a CRLF blank line
        (b"\xef\xbb\xbfa\n", 1, 0),  # a BOM at the start
        (b"\xef\xbb\xbf\n", 0, 1),  # a BOM alone is a blank first line
        (b"a\n\xef\xbb\xbf\n", 2, 0),  # a BOM elsewhere is a character
        (b" \t\r\n\t\n", 0, 2),  # spaces, tabs and CRs only
        (b"\x0b\n\x0c\n", 2, 0),  # other control characters are content
        (b"a\rb\n", 1, 0),  # a lone CR does not end a line
        (b"\xff\xfe\n", 1, 0),  # invalid UTF-8 is a (corrupt) record, never blank
    ],
)
def test_raw_count_from_the_bytes(data: bytes, records: int, blanks: int):
    assert count_lines(data) == (records, blanks)


def test_chunked_counting_agrees_with_a_whole_file_oracle(tmp_path: Path, monkeypatch):
    import random

    rng = random.Random(3)
    monkeypatch.setattr(bind_s, "CHUNK", 7)  # lines straddle chunk boundaries
    for trial in range(200):
        data = bytes(rng.choice(b" \t\r\nab\xef\xbb\xbf") for _ in range(rng.randint(0, 80)))
        p = tmp_path / f"f{trial}.json"
        p.write_bytes(data)
        body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
        lines = body.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        blank = sum(1 for ln in lines if not ln.strip(b" \t\r"))
        bound = bind_s.bind_file(str(p), "ndjson")
        assert (bound.records, bound.blank_lines) == (len(lines) - blank, blank), data
        assert bound.sha256 == hashlib.sha256(data).hexdigest()


def test_csv_header_is_not_a_record(tmp_path: Path):
    p = tmp_path / "x.csv"
    p.write_bytes(b"\n\nid,name\n1,a\n\n2,b\n")
    assert bind_s.bind_file(str(p), "csv").records == 2
    assert bind_s.bind_file(str(p), "csv", csv_header=False).records == 3
