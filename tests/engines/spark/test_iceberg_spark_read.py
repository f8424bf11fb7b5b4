"""Spark's Iceberg runtime (JdbcCatalog) reads the tables sluicegate published with
pyiceberg on the embedded engine, through the same SQLite catalog file.

The catalog settings come from ``engines/iceberg_catalog.py:spark_conf`` (the ones the
docs tell a Spark user to set); the rows Spark reads must equal the rows pyiceberg
reads, and the time travel to the first snapshot of the bronze table must give its rows.
"""

from __future__ import annotations

import pytest

from sluicegate.engines.iceberg_catalog import resolve, spark_conf
from tests.engines.test_differential import _rows
from tests.engines.test_iceberg_duckdb import seed001  # noqa: F401 - the shared fixture
from tests.iceberg_read import iceberg_dicts

pytestmark = pytest.mark.spark


def test_spark_jdbc_catalog_reads_what_the_embedded_engine_published(spark, seed001):  # noqa: F811
    assert seed001["first"].returncode == 0, seed001["first"].stderr
    tmp = seed001["tmp"]
    spec = resolve("lake", "sqlite:///catalog.db", "iceberg", str(tmp))
    for k, v in spark_conf(spec).items():
        spark.conf.set(k, v)
    cat = seed001["cat"]
    for table in ("sales_clean", "quality_facts"):
        got = [r.asDict() for r in spark.table(f"lake.silver.{table}").collect()]
        assert _rows(got) == _rows(iceberg_dicts(cat, f"silver.{table}")), table
    first = spark.read.option("versionAsOf", seed001["s1"]).table("lake.bronze.sales")
    assert sorted(r.oid for r in first.collect()) == [1, 2, 3, 4]
    assert spark.table("lake.bronze.sales").count() == 5
