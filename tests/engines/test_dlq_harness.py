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

``make_shop(root, engine=...)`` runs the shop on DuckDB (``wh.duckdb``) or Spark (the
warehouse folder ``wh``); ``query`` and ``inbox`` read either back with plain SQL.
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
from tests.engines.engine_params import read_dicts, read_rows, warehouse_name
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


def make_shop(root: Path, lines: list[Any] | None = None, engine: str = "duckdb") -> Path:
    (root / "data").mkdir(parents=True, exist_ok=True)
    write_lines(root, lines if lines is not None else LINES)
    with open(root / "data" / "customers.json", "w", encoding="utf-8") as f:
        for cid in (10, 11, 12):
            f.write(json.dumps({"cid": cid}) + "\n")
    doc = {**CONTRACT, "engine": engine}
    doc["outputs"] = {**CONTRACT["outputs"], "warehouse": warehouse_name(engine)}
    path = root / "contract.yml"
    path.write_text(json.dumps(doc), encoding="utf-8")  # JSON is YAML
    return path


def warehouse(contract: Path) -> Path:
    """The shop's warehouse (a DuckDB file or a Spark warehouse folder)."""
    doc = json.loads(contract.read_text(encoding="utf-8"))
    return contract.parent / doc["outputs"]["warehouse"]


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
    """A read-only query (DuckDB SQL) on the shop's warehouse, either engine."""
    return read_rows(warehouse(contract), sql, params)


def execute(contract: Path, sql: str) -> None:
    """Tamper with the warehouse directly (what a careless operator or a bug could do)."""
    con = duckdb.connect(str(contract.parent / "wh.duckdb"))
    try:
        con.execute(sql)
    finally:
        con.close()


def inbox(contract: Path) -> dict[int, dict[str, Any]]:
    """Inbox rows by source line."""
    rows = read_dicts(warehouse(contract), "SELECT * FROM dlq ORDER BY _source_line")
    return {r["_source_line"]: r for r in rows}


def expected_key(row: dict[str, Any], source_table: str = "orders_raw") -> str:
    """The key recomputed in pure Python from the row's values and lineage."""
    return reference_key(source_table, reference_json(row, KINDS))


def key_of(contract: Path, line: int) -> str:
    return inbox(contract)[line]["_dlq_sk"]
