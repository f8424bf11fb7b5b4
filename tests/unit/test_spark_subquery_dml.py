"""The MERGE the Spark engine runs instead of ``UPDATE/DELETE … WHERE k IN (SELECT …)``
(Delta refuses subqueries there) changes exactly the rows the original changes.

Checked by running both forms on DuckDB, which accepts both, against copies of one table,
and by rendering the MERGE for Spark (the Spark run itself is in the DLQ conformance tests).
"""

from __future__ import annotations

import duckdb
import pytest
from sqlglot import exp, parse_one

from sluicegate.engines.spark_subquery_dml import merge_for_subquery_dml
from sluicegate.errors import SluiceError

SETUP = [
    "CREATE TABLE t (k INTEGER, v VARCHAR, s VARCHAR)",
    "INSERT INTO t VALUES (1,'a','new'),(2,'b','new'),(3,'c','fixed'),(4,'d','new'),(NULL,'e','new')",
    # duplicate keys in the key table: a MERGE must still touch each row once
    "CREATE TABLE keys (k INTEGER)",
    "INSERT INTO keys VALUES (2),(3),(3),(NULL)",
]

CASES = [
    "UPDATE t SET v = 'x', s = 'recycled' WHERE k IN (SELECT k FROM keys)",
    "UPDATE t SET v = v || '!' WHERE s = 'new' AND k IN (SELECT k FROM keys WHERE k > 1)",
    "DELETE FROM t WHERE k IN (SELECT k FROM keys)",
    "DELETE FROM t WHERE k IN (SELECT k FROM keys) AND s <> 'fixed'",
]


def _table_after(sql: str) -> list[tuple]:
    con = duckdb.connect()
    for s in SETUP:
        con.execute(s)
    con.execute(sql)
    return sorted(con.execute("SELECT * FROM t").fetchall(), key=repr)


@pytest.mark.parametrize("sql", CASES)
def test_merge_changes_the_same_rows(sql: str) -> None:
    stmt = parse_one(sql, read="duckdb")
    merged = merge_for_subquery_dml(stmt)
    assert isinstance(merged, exp.Merge)
    assert _table_after(merged.sql("duckdb")) == _table_after(sql)
    spark_sql = merged.sql("spark", unsupported_level="raise")
    assert spark_sql.startswith("MERGE INTO t USING (SELECT DISTINCT")


def test_statements_without_a_subquery_are_left_alone() -> None:
    stmt = parse_one("UPDATE t SET v = 'x' WHERE k = 1", read="duckdb")
    assert merge_for_subquery_dml(stmt) is stmt


def test_two_subqueries_are_refused_not_guessed() -> None:
    stmt = parse_one(
        "DELETE FROM t WHERE k IN (SELECT k FROM keys) AND v IN (SELECT v FROM t)", read="duckdb"
    )
    with pytest.raises(SluiceError, match="at most one"):
        merge_for_subquery_dml(stmt)
