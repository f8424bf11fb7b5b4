"""Shared helpers for the DLQ tests: a small shop feed with every kind of quarantined row.

Lines of ``data/orders.json`` (1-based), and what the contract makes of them:

1. good                                   → clean
2. amt -5                                 → positive_amount
3. the same payload as line 2             → positive_amount (a second DLQ row)
4. cid 99 (not a customer)                → known_customer
5. amt "abc"                              → type_mismatch (text kept in _rescued_data)
6. ``{not json``                          → corrupt_record
7. amt missing                            → positive_amount (the rule is NULL: fails)
8. good                                   → clean
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from sluicegate.compile.contract_check import load_contract
from sluicegate.contract.loader import LoadedContract
from sluicegate.dlq.store import DlqStore, open_store
from sluicegate.run.pipeline import RunResult, run_contract
from tests.unit.test_dlq_canonical import reference_json, reference_key

DAY = "2024-03-05"
CONTRACT = {
    "name": "shop",
    "source": {
        "name": "orders_raw",
        "path": "data/orders.json",
        "format": "ndjson",
        "columns": {
            "oid": {"type": "BIGINT", "nullable": False},
            "cid": "INTEGER",
            "amt": "DECIMAL(10,2)",
            "ts": "TIMESTAMP",
        },
    },
    "references": {
        "customers": {"path": "data/customers.json", "columns": {"cid": "INTEGER"}},
    },
    "rules": [
        {"name": "positive_amount", "expect": "amt > 0"},
        {"name": "known_customer", "expect": "cid IN (SELECT cid FROM customers)"},
    ],
    "gate": {"warn_above": 1.0, "fail_above": 1.0},
    "outputs": {
        "warehouse": "wh.duckdb",
        "clean": "clean",
        "quarantine": "dlq",
        "duplicates": "dups",
    },
}
TS = "2024-03-05T08:00:00"
LINES: list[Any] = [
    {"oid": 1, "cid": 10, "amt": "12.50", "ts": TS},
    {"oid": 2, "cid": 10, "amt": -5, "ts": TS},
    {"oid": 2, "cid": 10, "amt": -5, "ts": TS},
    {"oid": 4, "cid": 99, "amt": 3, "ts": TS},
    {"oid": 5, "cid": 11, "amt": "abc", "ts": TS},
    "{not json",
    {"oid": 7, "cid": 11, "ts": TS},
    {"oid": 8, "cid": 11, "amt": 1, "ts": TS},
]
KINDS = {
    "oid": "integer",
    "cid": "integer",
    "amt": "decimal",
    "ts": "timestamp",
    "_source_file": "string",
    "_source_line": "integer",
    "_logical_date": "date",
}


def make_shop(root: Path, lines: list[Any] | None = None) -> Path:
    (root / "data").mkdir(parents=True, exist_ok=True)
    write_lines(root, lines if lines is not None else LINES)
    with open(root / "data" / "customers.json", "w", encoding="utf-8") as f:
        for cid in (10, 11, 12):
            f.write(json.dumps({"cid": cid}) + "\n")
    path = root / "contract.yml"
    path.write_text(json.dumps(CONTRACT), encoding="utf-8")  # JSON is YAML
    return path


def write_lines(root: Path, lines: list[Any]) -> None:
    with open(root / "data" / "orders.json", "w", encoding="utf-8") as f:
        for r in lines:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")


def loaded(contract: Path, day: str = DAY) -> LoadedContract:
    return load_contract(contract, logical_date=day)


def run(contract: Path, day: str = DAY) -> RunResult:
    r = run_contract(loaded(contract, day))
    assert r.status != "ledger_violation", r.metrics.get("error")
    return r


@contextmanager
def store(contract: Path, day: str = DAY) -> Iterator[DlqStore]:
    with open_store(loaded(contract, day)) as s:
        yield s


def query(contract: Path, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(contract.parent / "wh.duckdb"), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def execute(contract: Path, sql: str) -> None:
    """Tamper with the warehouse directly (what a careless operator or a bug could do)."""
    con = duckdb.connect(str(contract.parent / "wh.duckdb"))
    try:
        con.execute(sql)
    finally:
        con.close()


def inbox(contract: Path) -> dict[int, dict[str, Any]]:
    """Inbox rows by source line."""
    con = duckdb.connect(str(contract.parent / "wh.duckdb"), read_only=True)
    try:
        cur = con.execute("SELECT * FROM dlq ORDER BY _source_line")
        names = [d[0] for d in cur.description]
        return {
            r[names.index("_source_line")]: dict(zip(names, r, strict=True)) for r in cur.fetchall()
        }
    finally:
        con.close()


def expected_key(row: dict[str, Any], source_table: str = "orders_raw") -> str:
    """The key recomputed in pure Python from the row's values and lineage."""
    return reference_key(source_table, reference_json(row, KINDS))


def key_of(contract: Path, line: int) -> str:
    return inbox(contract)[line]["_dlq_sk"]
