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
    """psycopg 3: ``COPY … FROM STDIN (FORMAT CSV)`` fed by Arrow's C++ CSV writer."""
    import io

    import psycopg
    import pyarrow.csv as pacsv

    conn = psycopg.connect(url, password=password, autocommit=False)
    try:
        with conn.cursor() as cur:
            cur.execute(DDL)
            t = time.perf_counter()
            with cur.copy(
                f"COPY stage ({', '.join(table.column_names)}) FROM STDIN (FORMAT CSV)"
            ) as copy:
                for batch in table.to_batches(122_880):
                    buf = io.BytesIO()
                    pacsv.write_csv(
                        batch, buf, write_options=pacsv.WriteOptions(include_header=False)
                    )
                    copy.write(buf.getbuffer())
            elapsed = time.perf_counter() - t
            cur.execute("SELECT count(*) FROM stage")
            assert cur.fetchone()[0] == table.num_rows
        conn.rollback()
        return elapsed
    finally:
        conn.close()


def with_adbc(url: str, password: str, table: pa.Table) -> float:
    """ADBC: the path sluicegate serves with (engines/postgres.py ``ingest``)."""
    from sqlglot import exp

    from sluicegate.engines.postgres import PostgresTarget

    pg = PostgresTarget(url, password=password, label="bench")
    try:
        pg.cur.execute(DDL)
        t = time.perf_counter()
        reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(122_880))
        n = pg.ingest("stage", reader)
        elapsed = time.perf_counter() - t
        rows = pg.fetch(exp.select(exp.Count(this=exp.Star())).from_("stage"))
        assert rows[0][0] == table.num_rows and n in (-1, table.num_rows), (rows, n)
        pg.rollback()
        return elapsed
    finally:
        pg.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=986_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    from tests.servers.postgres import PostgresServer

    table = fact_table(args.rows)
    assert table.column("unit_price").type == pa.decimal128(10, 2)
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
