"""The Iceberg SQL catalog in a real PostgreSQL 15 server (the session's ``pg_server``,
started on loopback by tests/servers/postgres.py and stopped at the end).

The same seed-001 shape as test_iceberg_duckdb.py with ``catalogs.lake.uri:
postgresql://…``: the bronze table is created by pyiceberg directly, the contract bound
to its first snapshot publishes into the catalog, and the catalog database holds the
standard Iceberg JDBC-catalog rows (``iceberg_tables``) read with ``psql``.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tests.engines.test_iceberg_duckdb import CONTRACT, _bronze
from tests.iceberg_read import iceberg_dicts

pytestmark = [pytest.mark.duckdb, pytest.mark.slow]


def test_postgres_catalog_end_to_end(pg_server, tmp_path):
    from pyiceberg.catalog.sql import SqlCatalog

    url = pg_server.create_database("iceberg_catalog")
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
    r = run_cli("run", str(contract), "--logical-date", "2024-01-31", "--json")
    assert r.returncode == 0, r.stderr
    metrics = json.loads(r.stdout)
    assert metrics["input"]["snapshot"]["snapshot_id"] == s1 != s2
    assert sorted(x["oid"] for x in iceberg_dicts(cat, "silver.sales_clean")) == [1, 4]
    rows = pg_server.psql(
        "SELECT catalog_name || '.' || table_namespace || '.' || table_name FROM iceberg_tables "
        "ORDER BY 1",
        database="iceberg_catalog",
    )
    assert "lake.silver.sales_clean" in rows and "lake.bronze.sales" in rows
    assert "lake.silver.quality_facts" in rows
