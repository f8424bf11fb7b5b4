"""Iceberg on the embedded engine: one SQLite catalog, snapshot-bound sources, WAP outputs.

* the orders example published as Iceberg tables (pyiceberg on DuckDB) equals the
  DuckDB-file run row for row, every table read back by pyiceberg directly;
* the seed-001 shape: a bronze Iceberg table with two snapshots, a contract bound to
  the first, facts published into Iceberg; the rerun reads the first snapshot again;
  ``sluicegate snapshot`` names the snapshot id each table got, which pyiceberg confirms;
* a missing table or snapshot is a located contract error (exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.conftest import copy_orders_example, run_cli
from tests.engines.test_differential import _rows, assert_same_outcome, run_both
from tests.iceberg_read import catalog, iceberg_dicts

pytestmark = pytest.mark.duckdb


@pytest.fixture(scope="module")
def orders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("iceberg-orders")
    contract = copy_orders_example(tmp / "orders") / "contract.yml"
    runs = run_both(contract, tmp, {}, "2024-01-01", ("duckdb", "duckdb-iceberg"))
    runs["tmp"] = tmp
    return runs


def test_orders_same_outcome_on_duckdb_file_and_iceberg(orders):
    o = orders["duckdb"]["loaded"].contract.outputs
    tables = [o.clean, o.quarantine, o.outbox, o.duplicates, o.facts, "_sluicegate_runs"]
    assert_same_outcome(orders, tables)
    tmp = orders["tmp"]
    cat = catalog(tmp / "catalog.db", tmp / "iceberg")
    versions = orders["duckdb-iceberg"]["result"].metrics["table_versions"]
    for table in (o.clean, o.facts, "_sluicegate_runs"):
        t = cat.load_table(f"duckdb_iceberg.{table}")
        assert versions[table] == t.current_snapshot().snapshot_id
        assert not [r for r in t.metadata.refs if r != "main"], "a WAP branch was left behind"
    spec = cat.load_table(f"duckdb_iceberg.{o.facts}").spec()
    assert [f.name for f in spec.fields] == ["logical_date_month"]  # year/month
    spec = cat.load_table(f"duckdb_iceberg.{o.clean}").spec()
    assert [f.name for f in spec.fields] == ["_logical_date_month"]


BRONZE = pa.schema(
    [
        pa.field("oid", pa.int32()),
        pa.field("cid", pa.int32()),
        pa.field("amt", pa.int32()),
        pa.field("ots", pa.int64()),
    ]
)


def _bronze(cat: Any) -> tuple[int, int]:
    """bronze.sales with two appends; (first snapshot id, second snapshot id)."""
    cat.create_namespace_if_not_exists("bronze")
    t = cat.create_table("bronze.sales", schema=BRONZE)
    first = pa.table(
        {"oid": [1, 2, 3, 4], "cid": [10, None, 11, 10], "amt": [5, 7, -1, 9], "ots": [1, 2, 3, 4]},
        schema=BRONZE,
    )
    t.append(first)
    s1 = t.current_snapshot().snapshot_id
    t.append(pa.table({"oid": [5], "cid": [10], "amt": [100], "ots": [5]}, schema=BRONZE))
    return s1, cat.load_table("bronze.sales").current_snapshot().snapshot_id


CONTRACT = """
name: sales
catalogs:
  lake: {{type: sql, uri: "sqlite:///catalog.db", warehouse: iceberg}}
source:
  format: iceberg
  catalog: lake
  table: {table}
  snapshot_id: {snapshot}
  columns:
    oid: {{type: INTEGER, nullable: false}}
    cid: INTEGER
    amt: INTEGER
    ots: BIGINT
rules:
  - name: null_customer
    expect: cid IS NOT NULL
  - name: positive_amount
    expect: amt > 0
gate: {{warn_above: 0.5, fail_above: 0.9}}
outputs:
  warehouse: wh
  format: iceberg
  catalog: lake
  namespace: silver
  clean: sales_clean
  quarantine: sales_quarantine
  facts: quality_facts
"""


@pytest.fixture(scope="module")
def seed001(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("iceberg-seed001")
    cat = catalog(tmp / "catalog.db", tmp / "iceberg")
    s1, s2 = _bronze(cat)
    contract = tmp / "contract.yml"
    contract.write_text(CONTRACT.format(table="bronze.sales", snapshot=s1))
    first = run_cli("run", str(contract), "--logical-date", "2024-01-31", "--json")
    return {"tmp": tmp, "cat": cat, "s1": s1, "s2": s2, "contract": contract, "first": first}


def test_contract_bound_to_first_snapshot_publishes_into_iceberg(seed001):
    first = seed001["first"]
    assert first.returncode == 0, first.stderr
    metrics = json.loads(first.stdout)
    snap = metrics["input"]["snapshot"]
    assert snap["snapshot_id"] == seed001["s1"] and snap["record_count"] == 4
    assert snap["table"] == "bronze.sales" and len(snap["schema_fingerprint"]) == 64
    assert metrics["input"]["raw_records"] == 4  # the snapshot summary's count
    assert len(metrics["input"]["files"]) == 1  # the first append's one data file
    cat = seed001["cat"]
    clean = iceberg_dicts(cat, "silver.sales_clean")
    # independent: of the first snapshot's 4 rows, oid 1 and 4 pass both rules
    assert sorted(r["oid"] for r in clean) == [1, 4]
    quarantined = iceberg_dicts(cat, "silver.sales_quarantine")
    assert len(quarantined) == 2  # oid 2 (no customer) and 3 (amount -1)
    facts = iceberg_dicts(cat, "silver.quality_facts")
    assert facts and {str(f["logical_date"]) for f in facts} == {"2024-01-31"}


def test_rerun_reads_the_first_snapshot_again_and_replaces_the_date(seed001):
    cat = seed001["cat"]
    before = _rows(iceberg_dicts(cat, "silver.sales_clean"))
    again = run_cli("run", str(seed001["contract"]), "--logical-date", "2024-01-31", "--json")
    assert again.returncode == 0, again.stderr
    metrics = json.loads(again.stdout)
    first = json.loads(seed001["first"].stdout)
    assert metrics["input"]["snapshot"]["snapshot_id"] == seed001["s1"]  # not the newer s2
    assert metrics["run_id"] == first["run_id"]
    assert _rows(iceberg_dicts(cat, "silver.sales_clean")) == before  # replaced, not doubled
    snap = run_cli("snapshot", str(seed001["contract"]), "--json")
    assert snap.returncode == 0, snap.stderr
    doc = json.loads(snap.stdout)
    for table, sid in doc["tables"].items():
        assert cat.load_table(f"silver.{table}").snapshot_by_id(sid) is not None, table
    assert doc["tables"]["sales_clean"] == metrics["table_versions"]["sales_clean"]


@pytest.mark.parametrize(
    ("table", "snapshot", "key"),
    [("bronze.nope", "1", "source.table"), ("bronze.sales", "42", "source.snapshot_id")],
)
def test_missing_table_or_snapshot_is_a_located_contract_error(seed001, table, snapshot, key):
    tmp: Path = seed001["tmp"]
    contract = tmp / f"bad-{snapshot}.yml"
    contract.write_text(CONTRACT.format(table=table, snapshot=snapshot))
    r = run_cli("run", str(contract), "--logical-date", "2024-01-31")
    assert r.returncode == 2, r.stderr
    assert key in r.stderr and "Traceback" not in r.stderr
    assert f"{contract.name}:" in r.stderr


@pytest.mark.parametrize("query", ["latest", "trend", "attention"])
def test_trino_dashboard_sql_on_the_iceberg_facts_gives_the_cli_answer(seed001, query):
    """``facts QUERY --sql --dialect trino`` run by DuckDB over the Iceberg tables as
    pyiceberg reads them (the Trino text transpiled by sqlglot) = the CLI's answer."""
    import duckdb
    import sqlglot

    contract = str(seed001["contract"])
    sql = run_cli("facts", query, contract, "--sql", "--dialect", "trino")
    assert sql.returncode == 0, sql.stderr
    cli = run_cli("facts", query, contract, "--json")
    assert cli.returncode == 0, cli.stderr
    want = json.loads(cli.stdout)
    want = want["rows"] if isinstance(want, dict) else want
    cat = seed001["cat"]
    con = duckdb.connect()
    for table in ("quality_facts", "sales_quarantine"):
        con.register(table, cat.load_table(f"silver.{table}").scan().to_arrow())
    text = sqlglot.transpile(sql.stdout.strip().rstrip(";"), read="trino", write="duckdb")[0]
    cur = con.execute(text)
    names = [c[0] for c in cur.description]
    got = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    assert want, "the CLI answered nothing"
    assert [_norm_row(r) for r in got] == [_norm_row(r) for r in want]


def _norm_row(row: dict) -> dict:
    """Values as the CLI's JSON and DuckDB's driver both can say them: numbers as floats,
    the rest as text; wall-clock columns left out."""

    def norm(v: Any) -> Any:
        if v is None or isinstance(v, bool):
            return v
        try:
            return float(v)
        except (TypeError, ValueError):
            return str(v)

    return {k: norm(v) for k, v in row.items() if k not in ("evaluated_at", "published_at")}


@pytest.fixture(scope="module")
def retail(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from sluicegate.datagen.retail import generate
    from tests.conftest import REPO

    tmp = tmp_path_factory.mktemp("iceberg-retail")
    data = tmp / "data"
    truth = generate(data, lines=3_000, seed=11)
    runs = run_both(
        REPO / "examples/retail/contract.yml",
        tmp,
        {"root": str(data)},
        "2024-06-30",
        ("duckdb", "duckdb-iceberg"),
    )
    runs["truth"] = truth
    return runs


def test_retail_same_outcome_on_duckdb_file_and_iceberg(retail):
    """The differential with the model (dimension, fact table, marts) on Iceberg."""
    c = retail["duckdb"]["loaded"].contract
    o = c.outputs
    tables = [o.clean, o.quarantine, o.outbox, o.duplicates, o.facts, "_sluicegate_runs"]
    if c.model is not None:
        tables += [*c.model.dimensions, *c.model.facts, *c.model.marts]
    assert_same_outcome(retail, tables)
    led = retail["duckdb-iceberg"]["result"].metrics["ledger"]
    assert led["raw"] == retail["truth"]["raw_lines"]
    assert led["clean"] == retail["truth"]["clean"]
