"""A MERGE into an empty table and the INSERT ``insert_for_empty_target`` makes of it
leave the same rows — both run on DuckDB (its own MERGE is the oracle), for the MERGE
shapes the product writes and for conditions, NULL keys and duplicate source keys."""

from __future__ import annotations

import duckdb
import pytest
import sqlglot

from sluicegate.engines.merge_into_empty import insert_for_empty_target

pytestmark = pytest.mark.duckdb

SOURCE = "CREATE TABLE s AS SELECT * FROM (VALUES (1, 'a', 5), (2, 'b', -1), (NULL, 'c', 3), (1, 'd', 7)) v(k, s, n)"

MERGES = [
    # the DLQ inbox's shape: two MATCHED clauses, one NOT MATCHED insert
    "MERGE INTO t AS _t USING s AS _s ON _t.k = _s.k "
    "WHEN MATCHED AND _t.n = 1 THEN UPDATE SET s = _s.s "
    "WHEN MATCHED THEN UPDATE SET n = _s.n "
    "WHEN NOT MATCHED THEN INSERT (k, s, n) VALUES (_s.k, _s.s, _s.n)",
    # the facts' shape: from a subquery, and a NOT MATCHED BY SOURCE delete
    "MERGE INTO t AS x USING (SELECT k, s, n * 2 AS n FROM s) AS y ON x.k = y.k "
    "WHEN MATCHED THEN UPDATE SET n = y.n "
    "WHEN NOT MATCHED THEN INSERT (k, s, n) VALUES (y.k, y.s, y.n) "
    "WHEN NOT MATCHED BY SOURCE AND x.s = 'z' THEN DELETE",
    # a condition on the insert, columns in another order, one left out (NULL)
    "MERGE INTO t AS x USING s AS y ON x.k = y.k "
    "WHEN NOT MATCHED AND y.n > 0 THEN INSERT (n, k) VALUES (y.n + 1, y.k)",
]


def _rows(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple]:
    return con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()


@pytest.mark.parametrize("merge_sql", MERGES)
def test_the_insert_leaves_what_the_merge_leaves(merge_sql):
    con = duckdb.connect()
    con.execute(SOURCE)
    con.execute("CREATE TABLE t (k INTEGER, s VARCHAR, n INTEGER)")
    con.execute(merge_sql)
    want = _rows(con, "t")
    con.execute("DELETE FROM t")
    insert = insert_for_empty_target(sqlglot.parse_one(merge_sql, read="duckdb"))
    assert insert is not None
    con.execute(insert.sql("duckdb"))
    assert _rows(con, "t") == want and want


def test_no_rewrite_where_the_merge_has_no_single_insert():
    two = sqlglot.parse_one(
        "MERGE INTO t USING s ON t.k = s.k "
        "WHEN NOT MATCHED AND s.n > 0 THEN INSERT (k) VALUES (s.k) "
        "WHEN NOT MATCHED THEN INSERT (k) VALUES (-s.k)",
        read="duckdb",
    )
    assert insert_for_empty_target(two) is None
    update_only = sqlglot.parse_one(
        "MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN UPDATE SET n = s.n", read="duckdb"
    )
    assert insert_for_empty_target(update_only) is None
