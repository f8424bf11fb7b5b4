"""The run's counts are ``COALESCE(COUNT_IF(cond), 0)``: rendered and run on each dialect.

A count is of rows where the condition is true — a NULL condition is not counted — and
is 0, never NULL, over no rows; a dialect without ``COUNT_IF`` gets sqlglot's ``SUM(CASE
…)``, which the COALESCE keeps at 0. Checked against Python's own count of the rows.
"""

from __future__ import annotations

import duckdb
import pytest

from sluicegate.compile.metrics import ranked_counts
from sluicegate.compile.render import render

# (_rn, _corrupt, _undeclared, _a0, _x0, a): a duplicate, a corrupt record, an undeclared
# field, an absent key, a mismatch, NULL flags
ROWS = [
    (1, False, None, False, False, "x"),
    (2, False, '{"k": 1}', False, True, None),
    (1, True, None, None, None, None),
    (1, None, None, True, None, "y"),
]
COLUMNS = "_rn INTEGER, _corrupt BOOLEAN, _undeclared VARCHAR, _a0 BOOLEAN, _x0 BOOLEAN, a VARCHAR"


def _expected(rows: list[tuple]) -> list[int]:
    """The counts ranked_counts names, by hand: true is counted, False and NULL are not."""
    return [
        len(rows),
        sum(1 for r in rows if r[0] > 1),
        sum(1 for r in rows if r[1] is True),
        sum(1 for r in rows if r[2] is not None),
        # present: not corrupt and not absent
        sum(1 for r in rows if r[1] is False and r[3] is False),
        sum(1 for r in rows if r[4] is True),
        sum(1 for r in rows if r[5] is not None),
    ]


@pytest.mark.parametrize("rows", [ROWS, []], ids=["rows", "no rows"])
def test_counts_on_duckdb(rows: list[tuple]) -> None:
    con = duckdb.connect()
    con.execute(f"CREATE TABLE ranked ({COLUMNS})")  # test-only DDL
    if rows:
        con.executemany("INSERT INTO ranked VALUES (?, ?, ?, ?, ?, ?)", rows)
    q, names = ranked_counts("ranked", ["a"])
    sql = render(q, "duckdb")
    assert "COUNT_IF(" in sql
    got = list(con.execute(sql).fetchone())
    assert len(got) == len(names) == 7
    assert got == _expected(rows)


def test_a_dialect_without_count_if_still_counts_zero() -> None:
    """PostgreSQL has no COUNT_IF: sqlglot's SUM(CASE …) runs, its NULL made 0 (run on
    DuckDB, which accepts that spelling too)."""
    q, _ = ranked_counts("ranked", ["a"])
    sql = render(q, "postgres")
    assert "COUNT_IF" not in sql and "SUM(CASE" in sql
    con = duckdb.connect()
    con.execute(f"CREATE TABLE ranked ({COLUMNS})")
    assert list(con.execute(sql).fetchone()) == [0] * 7
    con.executemany("INSERT INTO ranked VALUES (?, ?, ?, ?, ?, ?)", ROWS)
    assert list(con.execute(sql).fetchone()) == _expected(ROWS)


@pytest.mark.spark
@pytest.mark.parametrize("rows", [ROWS, []], ids=["rows", "no rows"])
def test_counts_on_spark(spark, rows: list[tuple]) -> None:
    schema = COLUMNS.replace("INTEGER", "INT").replace("VARCHAR", "STRING")
    spark.createDataFrame(rows, schema).createOrReplaceTempView("ranked")
    q, _ = ranked_counts("ranked", ["a"])
    sql = render(q, "spark")
    assert "COUNT_IF(" in sql
    assert list(spark.sql(sql).collect()[0]) == _expected(rows)
