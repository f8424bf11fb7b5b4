"""Iceberg outputs on Spark: write-audit-publish with Iceberg's branches, one catalog for both.

* differential: the orders example on DuckDB-file, DuckDB + Iceberg (pyiceberg) and
  Spark + Iceberg (Spark's Iceberg runtime, ``engines/iceberg_spark.py``) gives the same
  outcome; every Iceberg table is read back by pyiceberg directly (not by sluicegate);
* interop: the embedded engine opens the namespace Spark wrote and reads the same rows;
  Spark reads the namespace the embedded engine wrote;
* the run record names each table's snapshot id, which is ``main``'s snapshot after the
  publish (pyiceberg confirms), no WAP branch is left, the fact tables are partitioned by
  month;
* WAP: a run killed by a fault after its branches are written and journaled leaves
  ``main`` of every table where it was while the branch holds the run's snapshot; the
  next open completes the publish (fast-forward), and the rerun replaced its date (the
  rows equal the first run's); a run that fails before the commit rolls back — no
  branch, ``main`` untouched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.engines.iceberg_catalog import resolve, spark_conf
from sluicegate.run.pipeline import run_contract
from tests.conftest import copy_orders_example
from tests.engines.test_differential import (
    _rows,
    assert_same_outcome,
    duckdb_table,
    output_rows,
    run_both,
    use_iceberg,
)
from tests.iceberg_read import catalog

pytestmark = pytest.mark.spark

NS = "spark_iceberg"
DAY = "2024-01-01"


@pytest.fixture(scope="module")
def orders(spark, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("iceberg-spark-orders")
    contract = copy_orders_example(tmp / "orders") / "contract.yml"
    runs = run_both(contract, tmp, {}, DAY, ("duckdb", "duckdb-iceberg", "spark-iceberg"))
    runs["tmp"] = tmp
    runs["contract"] = contract
    return runs


def _tables(runs: dict[str, Any]) -> list[str]:
    o = runs["duckdb"]["loaded"].contract.outputs
    return [o.clean, o.quarantine, o.outbox, o.duplicates, o.facts, "_sluicegate_runs"]


def _cat(runs: dict[str, Any]) -> Any:
    return catalog(runs["tmp"] / "catalog.db", runs["tmp"] / "iceberg")


def _mains(cat: Any, tables: list[str]) -> dict[str, int | None]:
    out = {}
    for t in tables:
        snap = cat.load_table(f"{NS}.{t}").current_snapshot()
        out[t] = snap.snapshot_id if snap is not None else None
    return out


def _branches(cat: Any, table: str) -> dict[str, int]:
    refs = cat.load_table(f"{NS}.{table}").metadata.refs
    return {n: r.snapshot_id for n, r in refs.items() if n != "main"}


def test_spark_iceberg_same_outcome_as_duckdb(orders):
    assert_same_outcome(orders, _tables(orders))
    assert orders["spark-iceberg"]["result"].metrics["engine"] == "spark"


def test_snapshot_ids_partitions_and_no_branch_left(orders):
    o = orders["duckdb"]["loaded"].contract.outputs
    cat = _cat(orders)
    versions = orders["spark-iceberg"]["result"].metrics["table_versions"]
    for table in (o.clean, o.quarantine, o.facts, "_sluicegate_runs"):
        t = cat.load_table(f"{NS}.{table}")
        assert versions[table] == t.current_snapshot().snapshot_id, table
        assert t.properties.get("write.wap.enabled") == "true"
        assert not _branches(cat, table), f"a WAP branch was left on {table}"
    snaps = {
        r["table_name"]: r["version"]
        for r in cat.load_table(f"{NS}._sluicegate_snapshots").scan().to_arrow().to_pylist()
    }
    assert snaps[o.clean] == versions[o.clean]  # the run record names the real snapshot
    spec = cat.load_table(f"{NS}.{o.facts}").spec()
    assert [(f.name, str(f.transform)) for f in spec.fields] == [("logical_date_month", "month")]
    spec = cat.load_table(f"{NS}.{o.clean}").spec()
    assert [f.name for f in spec.fields] == ["_logical_date_month"]


def test_embedded_engine_reads_what_spark_wrote_and_back(orders, spark):
    from sluicegate.engines.duckdb_iceberg import DuckDBIcebergEngine

    tmp = orders["tmp"]
    spec = resolve("lake", f"sqlite:///{tmp / 'catalog.db'}", str(tmp / "iceberg"), str(tmp))
    eng = DuckDBIcebergEngine(str(tmp / "reader.duckdb"), iceberg=(spec, NS))
    try:
        for table in _tables(orders):
            got = _rows(eng.fetch_dicts(f'SELECT * FROM "{table}"'))
            assert got == output_rows(orders, "spark-iceberg", table), table
            assert got == duckdb_table(orders["duckdb"]["warehouse"], table) or not got
    finally:
        eng.close()
    # and Spark's Iceberg runtime reads the namespace pyiceberg wrote, through the catalog
    session = spark.newSession()
    for k, v in spark_conf(spec).items():
        session.conf.set(k, v)
    for table in _tables(orders):
        got = [
            r.asDict(recursive=True)
            for r in session.table(f"lake.duckdb_iceberg.{table}").collect()
        ]
        assert _rows(got) == output_rows(orders, "duckdb-iceberg", table), table


def _rerun(orders: dict[str, Any], monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    loaded = load_contract(orders["contract"], variables={}, logical_date=DAY)
    loaded.contract.outputs.warehouse = str(orders["spark-iceberg"]["warehouse"])
    loaded.contract.outputs.format = "iceberg"
    use_iceberg(loaded, orders["tmp"], "spark-iceberg")
    monkeypatch.setenv("SLUICEGATE_FAULT", fault)
    with pytest.raises(RuntimeError, match="fault injected"):
        run_contract(loaded, engine_name="spark")
    monkeypatch.delenv("SLUICEGATE_FAULT")


def test_a_run_failing_before_commit_rolls_back_its_branches(orders, monkeypatch):
    cat = _cat(orders)
    tables = _tables(orders)
    before = _mains(cat, tables)
    _rerun(orders, monkeypatch, "publish:before_commit:raise")
    assert _mains(_cat(orders), tables) == before
    for table in tables:
        assert not _branches(_cat(orders), table), table
    o = orders["duckdb"]["loaded"].contract.outputs
    assert output_rows(orders, "spark-iceberg", o.clean) == duckdb_table(
        orders["duckdb"]["warehouse"], o.clean
    )


def test_wap_main_untouched_until_fast_forward_then_recovered(orders, monkeypatch, spark):
    from sluicegate.engines.delta_journal import ACTIVE
    from sluicegate.engines.iceberg_spark import IcebergSparkStore

    cat = _cat(orders)
    o = orders["duckdb"]["loaded"].contract.outputs
    tables = _tables(orders)
    before = _mains(cat, tables)
    _rerun(orders, monkeypatch, "iceberg:journaled:raise")
    wh: Path = orders["spark-iceberg"]["warehouse"]
    journals = list((wh / ".sluicegate" / "iceberg" / "journal").glob("*.json"))
    assert len(journals) == 1
    cat = _cat(orders)
    assert _mains(cat, tables) == before  # a reader of main sees the previous run
    staged = _branches(cat, o.clean)
    assert len(staged) == 1 and next(iter(staged.values())) != before[o.clean]
    assert output_rows(orders, "spark-iceberg", o.clean) == duckdb_table(
        orders["duckdb"]["warehouse"], o.clean
    )
    ACTIVE.clear()  # the raising run's transaction is over: recovery may finish it
    tmp = orders["tmp"]
    spec = resolve("lake", f"sqlite:///{tmp / 'catalog.db'}", str(tmp / "iceberg"), str(tmp))
    done = IcebergSparkStore(spark.newSession(), str(wh), iceberg=(spec, NS)).recover()
    assert any("completed an interrupted publish" in d for d in done), done
    cat = _cat(orders)
    assert _mains(cat, [o.clean])[o.clean] == next(iter(staged.values()))
    assert not _branches(cat, o.clean)
    assert not list((wh / ".sluicegate" / "iceberg" / "journal").glob("*.json"))
    # the rerun replaced its logical date: the same rows as the first run, not twice
    for table in (o.clean, o.quarantine, o.duplicates):
        assert output_rows(orders, "spark-iceberg", table) == duckdb_table(
            orders["duckdb"]["warehouse"], table
        ), table


def test_a_created_table_counts_its_rows_on_iceberg(orders):
    """Iceberg's write does not count its rows: ``create_table_counted`` reads the staged
    table instead, inside the transaction, and the count is what pyiceberg reads."""
    import sqlglot

    from sluicegate.engines import open_engine

    tmp = orders["tmp"]
    spec = resolve("lake", f"sqlite:///{tmp / 'catalog.db'}", str(tmp / "iceberg"), str(tmp))
    eng = open_engine(
        "spark", str(tmp / "counted"), table_format="iceberg", iceberg=(spec, "counted")
    )
    try:
        query = sqlglot.parse_one("SELECT id FROM (VALUES (1), (2), (3)) AS v(id)", read="duckdb")
        with eng.transaction():
            assert eng.create_table_counted("three", query) == 3
        assert eng.create_table_counted("none", query.copy().where("id > 3")) == 0
    finally:
        eng.close()
    cat = _cat(orders)
    assert cat.load_table("counted.three").scan().to_arrow().num_rows == 3
    assert cat.load_table("counted.none").scan().to_arrow().num_rows == 0
