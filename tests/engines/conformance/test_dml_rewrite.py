"""The Parquet DML rewrite (engines/spark_dml.py) against DuckDB's own DELETE/UPDATE/MERGE.

The Spark engine cannot change Parquet in place; it computes each statement's new table
content as a SELECT. These tests run the statement natively on DuckDB and the rewritten
SELECT on a copy of the same table, and require the same rows — plus: the rows outside
the touched ``_logical_date`` partitions are unchanged, so rewriting only those is enough.
"""

from __future__ import annotations

import duckdb
import pytest
import sqlglot
from sqlglot import exp

from sluicegate.engines.spark_dml import rewrite

pytestmark = pytest.mark.duckdb

ROWS = """
CREATE TABLE t AS SELECT * FROM (VALUES
  (1, 'a', DATE '2024-01-01', 10),
  (2, 'b', DATE '2024-01-01', NULL),
  (3, NULL, DATE '2024-01-02', 30),
  (4, 'd', DATE '2024-01-03', 40),
  (5, 'e', DATE '2024-01-03', 50)
) v(k, s, _logical_date, n);
CREATE TABLE src AS SELECT * FROM (VALUES
  (2, 'B', DATE '2024-01-01', 21),
  (4, 'D', DATE '2024-01-03', 41),
  (6, 'F', DATE '2024-01-04', 61),
  (7, NULL, DATE '2024-01-05', NULL)
) v(k, s, _logical_date, n);
CREATE TABLE gone AS SELECT 5 AS k;
"""

STATEMENTS = [
    "DELETE FROM t WHERE _logical_date = DATE '2024-01-01'",
    "DELETE FROM t WHERE n > 20",  # NULL n stays
    "DELETE FROM t WHERE k IN (SELECT k FROM gone)",
    "DELETE FROM t",
    "UPDATE t SET s = 'x', n = n + 1 WHERE k >= 3",
    "UPDATE t SET n = 0 WHERE s IS NULL",
    "UPDATE t SET _logical_date = DATE '2024-02-01' WHERE k = 1",
    "MERGE INTO t AS tt USING src AS ss ON tt.k = ss.k "
    "WHEN MATCHED THEN UPDATE SET s = ss.s, n = ss.n "
    "WHEN NOT MATCHED THEN INSERT (k, s, _logical_date, n) VALUES (ss.k, ss.s, ss._logical_date, ss.n)",
    "MERGE INTO t AS tt USING src AS ss ON tt.k = ss.k "
    "WHEN MATCHED AND tt.n IS NULL THEN UPDATE SET n = 99 "
    "WHEN MATCHED THEN DELETE",
    "MERGE INTO t AS tt USING (SELECT * FROM src WHERE k > 3) AS ss ON tt.k = ss.k "
    "WHEN NOT MATCHED AND ss.n IS NOT NULL THEN INSERT (k, _logical_date) VALUES (ss.k, ss._logical_date) "
    "WHEN NOT MATCHED BY SOURCE AND tt._logical_date = DATE '2024-01-03' THEN DELETE",
    "MERGE INTO t AS tt USING src AS ss ON tt.k = ss.k "
    "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET n = -1",
]


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    return sorted(con.execute(sql).fetchall(), key=repr)


@pytest.mark.parametrize("sql", STATEMENTS)
def test_rewrite_equals_native_dml(sql: str):
    con = duckdb.connect()
    con.execute(ROWS)
    cols = [r[0] for r in con.execute("DESCRIBE t").fetchall()]
    types = {
        r[0]: exp.DataType.build(r[1], dialect="duckdb")
        for r in con.execute("DESCRIBE t").fetchall()
    }
    before = _rows(con, "SELECT * FROM t")
    rw = rewrite(sqlglot.parse_one(sql, read="duckdb"), cols, types)
    got = _rows(con, rw.content.sql("duckdb"))
    touched = {r[0] for r in con.execute(rw.touched.sql("duckdb")).fetchall()}
    con.execute(sql)
    want = _rows(con, "SELECT * FROM t")
    assert got == want
    # only the touched partitions differ: the others are byte-for-byte the old rows
    part = cols.index("_logical_date")
    assert [r for r in before if r[part] not in touched] == [
        r for r in want if r[part] not in touched
    ]
