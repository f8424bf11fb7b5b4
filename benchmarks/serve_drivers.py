"""psycopg 3 (CSV COPY of Arrow batches) vs the ADBC PostgreSQL driver (binary COPY via
``adbc_ingest``): the measurement behind engines/postgres.py's choice of driver.

Both load the same Arrow table — shaped like the retail fact ``fct_sales`` (text keys,
timestamps, integers, decimals, a boolean) — into a temporary table of the same schema
inside one transaction on a throwaway PostgreSQL 15 server started by the test launcher,
then roll back. Median of ``--runs`` timings per driver.

Usage::

    .venv/bin/python benchmarks/serve_drivers.py --rows 986000 --runs 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from decimal import Decimal
from pathlib import Path

import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def fact_table(rows: int) -> pa.Table:
    import duckdb

    con = duckdb.connect()
    return con.sql(
        f"""
        SELECT 's' || i AS sale_id,
               TIMESTAMP '2024-01-01' + to_seconds(i) AS order_ts,
               'c' || (i % 50000) AS customer_id, 'p' || (i % 800) AS product_id,
               'st' || (i % 40) AS store_id, 'web' AS channel,
               (i % 9 + 1)::INTEGER AS quantity, ((i % 10000) / 100)::DECIMAL(10,2) AS unit_price,
               ((i % 9 + 1) * (i % 10000) / 100)::DECIMAL(38,2) AS amount,
               'gold' AS segment, (i % 5)::BIGINT AS dim_customer_version,
               i % 97 = 0 AS dim_customer_unknown,
               'part-000.json' AS _source_file, i::BIGINT AS _source_line,
               DATE '2024-12-31' AS _logical_date
        FROM range({rows}) t(i)
        """
    ).to_arrow_table()


DDL = (
    "CREATE TEMPORARY TABLE stage (sale_id text, order_ts timestamp, customer_id text, "
    "product_id text, store_id text, channel text, quantity integer, unit_price numeric(10,2), "
    "amount numeric(38,2), segment text, dim_customer_version bigint, "
    "dim_customer_unknown boolean, _source_file text, _source_line bigint, _logical_date date)"
)


def with_psycopg(url: str, password: str, table: pa.Table) -> float:
    from sqlglot import exp

    from sluicegate.compile.serve_sql import copy_in
    from sluicegate.engines.postgres import PostgresTarget

    pg = PostgresTarget(url, password=password, label="bench")
    try:
        with pg.conn.cursor() as cur:
            cur.execute(DDL)
        t = time.perf_counter()
        n = pg.copy_batches(copy_in("stage", table.column_names), table.to_batches(122_880))
        elapsed = time.perf_counter() - t
        assert n == table.num_rows
        rows = pg.fetch(exp.select(exp.Count(this=exp.Star())).from_("stage"))
        assert rows[0][0] == table.num_rows, rows
        pg.rollback()
        return elapsed
    finally:
        pg.close()


def with_adbc(url: str, password: str, table: pa.Table) -> float:
    from urllib.parse import urlsplit, urlunsplit

    import adbc_driver_postgresql.dbapi as adbc

    parts = urlsplit(url)
    full = urlunsplit(
        parts._replace(netloc=f"{parts.username}:{password}@{parts.hostname}:{parts.port}")
    )
    conn = adbc.connect(full, autocommit=False)
    try:
        cur = conn.cursor()
        cur.execute(DDL)
        t = time.perf_counter()
        n = cur.adbc_ingest("stage", table, mode="append", temporary=True)
        elapsed = time.perf_counter() - t
        cur.execute("SELECT count(*) FROM stage")
        assert cur.fetchone()[0] == table.num_rows
        assert n in (-1, table.num_rows)
        conn.rollback()
        return elapsed
    finally:
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=986_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    from tests.servers.postgres import PostgresServer

    table = fact_table(args.rows)
    assert table.column("unit_price").type == pa.decimal128(10, 2)
    _ = Decimal
    with PostgresServer() as pg:
        url = f"postgresql://{pg.user}@{pg.host}:{pg.port}/postgres"
        for name, fn in (("psycopg CSV COPY", with_psycopg), ("ADBC adbc_ingest", with_adbc)):
            times = [fn(url, pg.password, table) for _ in range(args.runs)]
            med = statistics.median(times)
            print(
                f"{name:18s} {args.rows:>9,} rows  median {med:6.2f} s  "
                f"({args.rows / med:,.0f} rows/s)  runs: {', '.join(f'{t:.2f}' for t in times)}"
            )


if __name__ == "__main__":
    main()
