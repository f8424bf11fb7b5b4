"""Spark's Iceberg JdbcCatalog on a real PostgreSQL 15 catalog (the session's
``pg_server``, started on loopback by tests/servers/postgres.py).

The seed-001 shape on Spark: the bronze table is created by pyiceberg directly in a
catalog whose database is PostgreSQL; a contract bound to the bronze table's first
snapshot runs on Spark and publishes its outputs as Iceberg tables into the same
catalog (Spark's JdbcCatalog through the PostgreSQL JDBC driver, write-audit-publish on
a branch). pyiceberg reads the outputs back, and the catalog's own rows are read with
``psql``: neither is the engine that wrote them.
"""

from __future__ import annotations

import json

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.run.pipeline import run_contract
from tests.engines.test_iceberg_duckdb import CONTRACT, _bronze
from tests.iceberg_read import iceberg_dicts

pytestmark = pytest.mark.spark


def test_spark_publishes_into_a_postgres_catalog(spark, pg_server, tmp_path):  # noqa: ARG001
    from pyiceberg.catalog.sql import SqlCatalog

    url = pg_server.create_database("iceberg_spark_catalog")
    (tmp_path / "iceberg").mkdir()
    cat = SqlCatalog(
        "lake",
        uri="postgresql+psycopg://" + url.split("://", 1)[1],
        warehouse=f"file://{tmp_path / 'iceberg'}",
    )
    s1, s2 = _bronze(cat)
    text = CONTRACT.format(table="bronze.sales", snapshot=s1).replace(
        '"sqlite:///catalog.db"', json.dumps(url)
    )
    contract = tmp_path / "contract.yml"
    contract.write_text(text)
    loaded = load_contract(contract, logical_date="2024-01-31")
    result = run_contract(loaded, engine_name="spark")
    assert result.exit_code == 0, result.metrics.get("error")
    assert result.metrics["engine"] == "spark"
    assert result.metrics["input"]["snapshot"]["snapshot_id"] == s1 != s2
    # independent: rows 2 (no customer) and 3 (amount -1) fail; the second append is unread
    assert sorted(x["oid"] for x in iceberg_dicts(cat, "silver.sales_clean")) == [1, 4]
    assert sorted(x["oid"] for x in iceberg_dicts(cat, "silver.sales_quarantine")) == [2, 3]
    rows = pg_server.psql(
        "SELECT catalog_name || '.' || table_namespace || '.' || table_name FROM iceberg_tables "
        "ORDER BY 1",
        database="iceberg_spark_catalog",
    )
    assert "lake.silver.sales_clean" in rows and "lake.silver.quality_facts" in rows
    refs = cat.load_table("silver.sales_clean").metadata.refs
    assert set(refs) == {"main"}, refs  # the run's branch was fast-forwarded and removed
