"""Engine runners for the seed-helper tests (DuckDB and Spark).

Test code only: each runner loads rows into a table or view, creates views
and returns query results as tuples, which is all ``seedcheck.run_pipeline``
needs. Names are quoted part by part so reserved words and qualified names
work.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

DUCKDB_TYPES = {"int": "INTEGER", "bigint": "BIGINT", "string": "VARCHAR"}
SPARK_TYPES = {"int": "INT", "bigint": "BIGINT", "string": "STRING"}
DQ, BT = '"', "`"


def _quoted(name: str, quote: str) -> str:
    """Quote each part of a (possibly qualified) test table name."""
    return ".".join(f"{quote}{part}{quote}" for part in name.split("."))


class DuckDBRunner:
    """Runs the seed pipeline on an in-memory DuckDB connection."""

    def __init__(self) -> None:
        import duckdb

        self.con = duckdb.connect()

    def load(self, name: str, schema: Sequence[tuple[str, str]], rows: Iterable[tuple]) -> None:
        cols = ", ".join(f"{col} {DUCKDB_TYPES[typ]}" for col, typ in schema)
        self.con.execute(f"CREATE OR REPLACE TABLE {_quoted(name, DQ)} ({cols})")
        rows = list(rows)
        if rows:
            marks = ", ".join("?" for _ in schema)
            self.con.executemany(f"INSERT INTO {_quoted(name, DQ)} VALUES ({marks})", rows)

    def create_view(self, name: str, sql: str) -> None:
        self.con.execute(f"CREATE OR REPLACE VIEW {_quoted(name, DQ)} AS {sql}")

    def query(self, sql: str) -> list[tuple]:
        return [tuple(row) for row in self.con.execute(sql).fetchall()]


class SparkRunner:
    """Runs the seed pipeline on Spark SQL over temporary views.

    Temporary views may be named plainly or as ``system.session.<name>``,
    Spark's three-part spelling for them, which exercises qualified names.
    """

    def __init__(self, spark) -> None:
        self.spark = spark

    def load(self, name: str, schema: Sequence[tuple[str, str]], rows: Iterable[tuple]) -> None:
        ddl = ", ".join(f"{col} {SPARK_TYPES[typ]}" for col, typ in schema)
        frame = self.spark.createDataFrame(list(rows), schema=ddl)
        frame.createOrReplaceTempView(name.rsplit(".", 1)[-1])

    def create_view(self, name: str, sql: str) -> None:
        # Spark 4.1 accepts only a single-part name in CREATE TEMPORARY VIEW
        # (TEMP_VIEW_NAME_TOO_MANY_NAME_PARTS); queries still read it as session.<name>.
        plain = name.rsplit(".", 1)[-1]
        self.spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {_quoted(plain, BT)} AS {sql}")

    def query(self, sql: str) -> list[tuple]:
        return [tuple(row) for row in self.spark.sql(sql).collect()]
