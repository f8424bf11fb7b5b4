"""The canonical-JSON and key test vector (docs/dlq.md), pinned without any engine.

``reference_json`` is an independent pure-Python statement of the canonical form; the
engines' SQL must reproduce its text byte for byte (tests/engines/test_dlq_keys.py).
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import xxhash

SOURCE_TABLE = "orders_raw"
#: declared columns (order matters), then lineage and the logical date
KINDS = {
    "oid": "integer",
    "cid": "integer",
    "amt": "decimal",
    "note": "string",
    "ok": "boolean",
    "ts": "timestamp",
    "d": "date",
    "score": "float",
    "_source_file": "string",
    "_source_line": "integer",
    "_logical_date": "date",
}
TYPES = {
    "oid": "BIGINT",
    "cid": "INTEGER",
    "amt": "DECIMAL(10,2)",
    "note": "VARCHAR",
    "ok": "BOOLEAN",
    "ts": "TIMESTAMP",
    "d": "DATE",
    "score": "DOUBLE",
}
ROW = {
    "oid": 7,
    "cid": None,
    "amt": Decimal("-12.50"),
    "note": 'He said "hi" \\ \n\tnaïve\x01',
    "ok": True,
    "ts": dt.datetime(2024, 3, 5, 10, 11, 12),
    "d": dt.date(2024, 3, 5),
    "score": 0.1,
    "_source_file": "/data/orders/part-0.json",
    "_source_line": 3,
    "_logical_date": dt.date(2024, 3, 5),
}
EXPECTED_JSON = (
    r'{"oid":7,"cid":null,"amt":-12.50,"note":"He said \"hi\" \\ \n\tnaïve\u0001",'
    r'"ok":true,"ts":"2024-03-05T10:11:12.000000","d":"2024-03-05",'
    r'"score":1.00000000000000e-01,"_source_file":"/data/orders/part-0.json",'
    r'"_source_line":3,"_logical_date":"2024-03-05"}'
)
EXPECTED_KEY = "2371474086832283159"


def reference_value(v: object, kind: str) -> str:
    """One value in canonical form, written from the definition in docs/dlq.md."""
    if v is None:
        return "null"
    if kind == "string":
        return json.dumps(v, ensure_ascii=False)
    if kind == "integer":
        return str(int(v))
    if kind == "decimal":
        return str(v)  # Decimal keeps its scale: -12.50
    if kind == "float":
        x = float(v)
        if x != x:
            return '"NaN"'
        if x in (float("inf"), float("-inf")):
            return '"Infinity"' if x > 0 else '"-Infinity"'
        return f"{x:.14e}"  # C printf %.14e: correctly rounded, e±XX
    if kind == "boolean":
        return "true" if v else "false"
    if kind == "date":
        return '"' + v.isoformat() + '"'
    if kind == "timestamp":
        return '"' + v.strftime("%Y-%m-%dT%H:%M:%S.%f") + '"'
    raise AssertionError(kind)


def reference_json(row: dict, kinds: dict[str, str]) -> str:
    return "{" + ",".join(f'"{k}":' + reference_value(row[k], kinds[k]) for k in kinds) + "}"


def reference_key(source_table: str, row_json: str) -> str:
    u = xxhash.xxh64_intdigest((source_table + row_json).encode("utf-8"), seed=42)
    return str(u - (1 << 64) if u >= 1 << 63 else u)


def test_vector_json_text_is_pinned():
    assert reference_json(ROW, KINDS) == EXPECTED_JSON


def test_vector_key_is_pinned():
    assert reference_key(SOURCE_TABLE, EXPECTED_JSON) == EXPECTED_KEY


def test_vector_is_valid_json_with_every_key_in_order():
    doc = json.loads(EXPECTED_JSON)
    assert list(doc) == list(KINDS)
    assert doc["cid"] is None and doc["note"] == ROW["note"] and doc["score"] == 0.1


def test_key_depends_on_lineage_and_date():
    moved = dict(ROW, _source_line=4)
    other_day = dict(ROW, _logical_date=dt.date(2024, 3, 6))
    keys = {reference_key(SOURCE_TABLE, reference_json(r, KINDS)) for r in (ROW, moved, other_day)}
    assert len(keys) == 3
    assert reference_key("other_table", EXPECTED_JSON) != EXPECTED_KEY


def test_docs_state_the_same_vector():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "dlq.md").read_text(encoding="utf-8")
    assert EXPECTED_JSON in doc
    assert f"_dlq_sk = {EXPECTED_KEY}" in doc
