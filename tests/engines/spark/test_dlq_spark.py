"""The DLQ on Spark: the same keys as DuckDB from a real run, and the same lifecycle.

One contract folder, two warehouses (a DuckDB file and a Spark folder); the same fix,
reject and recycle on both must leave the same inbox, outbox and clean rows, read back
independently of the engines.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.dlq.ledger import dlq_ledger
from sluicegate.dlq.lifecycle import fix, mark
from sluicegate.dlq.store import open_store
from sluicegate.run.pipeline import run_contract
from sluicegate.run.recycle import recycle
from tests.engines.test_dlq_harness import CONTRACT, DAY, make_shop

pytestmark = pytest.mark.spark


def operate(path, engine: str) -> dict:
    loaded = load_contract(path, logical_date=DAY)
    r = run_contract(loaded, engine_name=engine)
    assert r.status != "ledger_violation", r.metrics.get("error")
    with open_store(loaded, engine_name=engine) as s:
        by_line = {row["_source_line"]: row["_dlq_sk"] for row in s.rows()}
        fix(s, keys=[by_line[2]], where=None, sets={"amt": "5"}, by="ann")
        fix(s, keys=[], where="_source_line = 4", sets={"cid": "12", "amt": "-1"}, by="ann")
        fix(s, keys=[by_line[5]], where=None, sets={"amt": "3.25"}, by="ann")
        mark(s, keys=[by_line[3]], where=None, status="rejected", by="ann")
        first = recycle(s, by="bob")
        second = recycle(s, by="bob")
        led = dlq_ledger(s)
    return {"keys": by_line, "first": first, "second": second, "ledger": led}


def read(path, table: str, spark_folder: bool) -> list[tuple]:
    con = duckdb.connect()
    if spark_folder:  # a Delta table, read by delta-rs (not sluicegate, not Spark)
        import pyarrow as pa

        from tests.delta_read import delta_dicts

        con.register("_delta_src", pa.Table.from_pylist(delta_dicts(Path(path) / table)))
        src = "_delta_src"
    else:
        con.execute(f"ATTACH '{path}' AS w (READ_ONLY)")
        src = f"w.{table}"
    cols = {
        "dlq": "_source_line, _dlq_sk, _dlq_status, _dlq_attempts, _reason, _row_data, "
        "CAST(amt AS VARCHAR), cid",
        "dlq_outbox": "_dlq_sk, _row_data",
        "clean": "_source_line, oid, cid, CAST(amt AS VARCHAR), _recycled_from",
    }[table]
    return sorted(con.execute(f"SELECT {cols} FROM {src}").fetchall(), key=repr)


def test_dlq_lifecycle_is_the_same_on_duckdb_and_spark(tmp_path, spark):
    duck = make_shop(tmp_path)
    on_spark = tmp_path / "contract_spark.yml"
    doc = dict(CONTRACT, outputs={**CONTRACT["outputs"], "warehouse": "wh_spark"})
    on_spark.write_text(json.dumps(doc), encoding="utf-8")

    d = operate(duck, "duckdb")
    s = operate(on_spark, "spark")
    assert s["keys"] == d["keys"]
    for k in ("considered", "recycled", "requarantined"):
        assert s["first"][k] == d["first"][k]
    assert (d["first"]["recycled"], d["first"]["requarantined"]) == (2, 1)
    assert s["second"]["recycled"] == d["second"]["recycled"] == 0
    assert s["ledger"]["balanced"] and d["ledger"]["balanced"]
    assert s["ledger"]["totals"] == d["ledger"]["totals"]
    for table in ("dlq", "dlq_outbox", "clean"):
        assert read(tmp_path / "wh_spark", table, True) == read(
            tmp_path / "wh.duckdb", table, False
        )
