"""Spark + Delta with the warehouse and the sources on S3 (moto's server on loopback).

The scenario of tests/engines/test_s3_duckdb.py (tests/engines/s3_case.py) for one
day — run, rewrite the object and rerun, fix and recycle a DLQ row: Spark
reads the ``s3://`` sources and writes the Delta tables through Hadoop's S3A
(hadoop-aws 3.4.2 from .jars/spark; ``fs.s3a.*`` from the contract's ``object_store:``
and ``${secret:…}`` tokens, engines/object_store.py), against the real S3 API of the
``s3_server`` session fixture. Every table is read back from S3 by delta-rs with the
test's own settings and must equal the same steps on local files into a DuckDB file —
the outcome DuckDB + Delta on S3 gives too.
"""

from __future__ import annotations

import os
import uuid

import pytest

from tests.engines import s3_case as case

pytestmark = pytest.mark.spark


@pytest.fixture
def secrets_env(s3_server):
    saved = dict(os.environ)
    for k in list(os.environ):
        if k.startswith("AWS_"):
            del os.environ[k]
    os.environ.update(s3_server.env())
    yield
    os.environ.clear()
    os.environ.update(saved)


def test_spark_on_s3_gives_the_duckdb_outcome(s3_server, secrets_env, spark, tmp_path):
    days = (case.DAY1,)  # one day, its rerun and the recycle: Spark runs are slow
    on_s3 = case.s3_run(s3_server, tmp_path, f"spark-{uuid.uuid4().hex[:8]}", "spark", days)
    twin = case.local_twin(tmp_path / "twin", days)
    for table in case.TABLES:
        assert on_s3["tables"][table] == twin["tables"][table], table
    prefix = on_s3["warehouse"].rsplit("/wh", 1)[0]
    for r in on_s3["raw"]["good_orders"]:  # lineage names the object, as on DuckDB
        assert r["_source_file"] == f"{prefix}/in/{r['_logical_date']}/orders.json"
    runs = on_s3["result"]["runs"]
    for metrics, rows in zip(runs, (case.ORDERS, case.ORDERS_V2), strict=True):
        led = metrics["ledger"]
        assert led["raw"] == len(rows)
        assert led["raw"] == led["clean"] + led["quarantined"] + led["duplicates"]
    assert on_s3["result"]["recycle"]["recycled"] == 1
    assert on_s3["result"]["dlq_ledger"]["balanced"]
    v = runs[0]["table_versions"]["good_orders"]  # time travel, by delta-rs
    old = case.delta_rows(s3_server, f"{on_s3['warehouse']}/good_orders", version=v)
    assert {r["amt"] for r in old if r["oid"] == 1} == {100}
